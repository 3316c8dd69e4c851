"""A pipe as the catalog keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject


class IngestMode(StrEnum):
    """How a volume pipe learns of new files."""

    LIST_PURGE = "LIST_PURGE"
    EVENT_NOTIFICATION = "EVENT_NOTIFICATION"


class PipeKind(StrEnum):
    """Where a pipe reads: files in a volume, or messages in a Kafka topic."""

    VOLUME = "VOLUME"
    KAFKA = "KAFKA"


class PipeStatus(StrEnum):
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"


@dataclass(frozen=True)
class PipeEntry(CatalogObject):
    """A pipe keeps the COPY statement's text; it cannot be altered, only dropped and recreated.
    A Kafka pipe also keeps its topic's id, which a deleted and recreated topic does not have,
    and the reason it stopped (`invalid_reason`), which runs set."""

    NAMESPACE: ClassVar[str] = "pipe"
    LABEL: ClassVar[str] = "pipe"
    SHOW: ClassVar[str] = "SHOW PIPES"
    CREATE: ClassVar[str] = "CREATE PIPE"
    # What it reads and the table it loads: neither is dropped while the pipe is there.
    REFERENCES: ClassVar[dict[str, str]] = {"volume": "volume", "table": RELATION}
    RUNTIME: ClassVar[tuple[str, ...]] = ("invalid_reason",)

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
    pipe_kind: PipeKind = PipeKind.VOLUME
    topic: str = ""
    topic_id: str = ""
    group_id: str = ""
    batch_interval_seconds: int = 60
    batch_size_per_partition: int | None = None
    # (partition, offset) where batch 1 starts: where the table's last batch of this topic and
    # group ended, when an earlier pipe loaded them (empty: the group's offsets, else earliest).
    resume_from: tuple[tuple[int, int], ...] = ()
    invalid_reason: str | None = None

    def event_queues_read(self) -> tuple[str, ...]:
        return (self.volume,) if self.ingest_mode is IngestMode.EVENT_NOTIFICATION else ()

    @property
    def input_name(self) -> str:
        """What it reads: its volume, or its Kafka topic."""
        return self.topic if self.pipe_kind is PipeKind.KAFKA else self.volume

    @property
    def status(self) -> PipeStatus:
        return PipeStatus.PAUSED if self.paused else PipeStatus.RUNNING
