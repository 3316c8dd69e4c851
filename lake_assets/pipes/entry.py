"""A pipe as the catalog keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from lake_assets.core.entries import CatalogObject
from lake_assets.core.states import IngestMode, PipeStatus


@dataclass(frozen=True)
class PipeEntry(CatalogObject):
    """A pipe keeps the COPY statement's text; it cannot be altered, only dropped and recreated."""

    NAMESPACE: ClassVar[str] = "pipe"
    LABEL: ClassVar[str] = "pipe"
    REFERENCES: ClassVar[dict[str, str]] = {"volume": "volume"}

    volume: str = ""
    table: str = ""
    copy_statement: str = ""
    ingest_mode: IngestMode = IngestMode.LIST_PURGE
    virtual_cluster: str | None = None
    comment: str | None = None
    paused: bool = False
    poll_interval_seconds: int = 5
    options: dict[str, str] = field(default_factory=dict)
    # EVENT_NOTIFICATION pipes also list the volume this often, for events that never came.
    backfill_interval_seconds: int = 60

    @property
    def status(self) -> PipeStatus:
        return PipeStatus.PAUSED if self.paused else PipeStatus.RUNNING
