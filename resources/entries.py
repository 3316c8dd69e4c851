"""Catalog entries for ingestion objects: storage connections, external volumes and pipes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class CatalogObject:
    """An object stored as JSON under (namespace, name); subclasses name their namespace."""

    NAMESPACE: ClassVar[str] = ""
    LABEL: ClassVar[str] = ""

    name: str
    created_at: str

    def to_spec(self) -> str:
        spec = asdict(self)
        spec.pop("name")
        spec.pop("created_at")
        return json.dumps(spec)

    @classmethod
    def from_spec(cls, name: str, created_at: str, spec: str) -> CatalogObject:
        values: dict[str, Any] = json.loads(spec)
        for item in fields(cls):
            if isinstance(values.get(item.name), list):
                values[item.name] = tuple(values[item.name])
        return cls(name=name, created_at=created_at, **values)


@dataclass(frozen=True)
class ConnectionEntry(CatalogObject):
    """Secrets are kept as references: `env:VAR` or `enc:<token>` (see resources.secrets)."""

    NAMESPACE: ClassVar[str] = "connection"
    LABEL: ClassVar[str] = "storage connection"

    type: str = "LOCAL"
    endpoint: str | None = None
    access_id: str | None = None
    access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None


@dataclass(frozen=True)
class VolumeEntry(CatalogObject):
    NAMESPACE: ClassVar[str] = "volume"
    LABEL: ClassVar[str] = "volume"

    location: str = ""
    connection: str = ""
    directory_enabled: bool = True
    auto_refresh: bool = False
    recursive: bool = True
    comment: str | None = None
    directory_location: str = ""
    queue_type: str | None = None
    queue_name: str | None = None


@dataclass(frozen=True)
class PipeEntry(CatalogObject):
    """A pipe keeps the COPY statement's text; it cannot be altered, only dropped and recreated."""

    NAMESPACE: ClassVar[str] = "pipe"
    LABEL: ClassVar[str] = "pipe"

    volume: str = ""
    table: str = ""
    copy_statement: str = ""
    ingest_mode: str = "LIST_PURGE"
    virtual_cluster: str | None = None
    comment: str | None = None
    paused: bool = False
    poll_interval_seconds: int = 5
    options: dict[str, str] = field(default_factory=dict)
    # EVENT_NOTIFICATION pipes also list the volume this often, for events that never came.
    backfill_interval_seconds: int = 60
