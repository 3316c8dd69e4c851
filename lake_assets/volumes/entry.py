"""An external volume as the catalog keeps it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lake_assets.core.entries import CatalogObject


@dataclass(frozen=True)
class VolumeEntry(CatalogObject):
    """`directory_location` is the Delta directory table's path under the warehouse;
    `change_tracking` says a stream reads it, so it is kept current by itself."""

    NAMESPACE: ClassVar[str] = "volume"
    LABEL: ClassVar[str] = "volume"
    SHOW: ClassVar[str] = "SHOW VOLUMES"
    CREATE: ClassVar[str] = "CREATE EXTERNAL VOLUME"
    REFERENCES: ClassVar[dict[str, str]] = {"connection": "connection"}

    location: str = ""
    connection: str = ""
    directory_enabled: bool = True
    auto_refresh: bool = False
    recursive: bool = True
    comment: str | None = None
    directory_location: str = ""
    queue_type: str | None = None
    queue_name: str | None = None
    change_tracking: bool = False
