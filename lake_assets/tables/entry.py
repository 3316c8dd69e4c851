"""A table as the catalog keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject, Column


@dataclass(frozen=True)
class TableEntry(CatalogObject):
    """A Delta table the lakehouse owns; `properties` are the seed-level ones (change_tracking)."""

    NAMESPACE: ClassVar[str] = RELATION
    KIND: ClassVar[str] = "table"
    LABEL: ClassVar[str] = "table"
    SHOW: ClassVar[str] = "SHOW TABLES"
    CREATE: ClassVar[str] = "CREATE TABLE"
    STATE: ClassVar[tuple[str, ...]] = ("version", "row_count")

    location: str
    columns: tuple[Column, ...]
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    version: int | None = None
    row_count: int | None = None

    @property
    def change_tracking(self) -> bool:
        return self.properties.get("change_tracking", "false").lower() == "true"
