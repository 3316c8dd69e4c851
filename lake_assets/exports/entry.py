"""A changelog export as the catalog keeps it: what it reads, where its records go, and where
its progress is kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject

EXPORT = "export"
# The status table's name when STATUS_TABLE is not given (a managed product names its own).
DEFAULT_STATUS_TABLE = "lake_changelog_status"
DEFAULT_MAX_RETRIES = 30


@dataclass(frozen=True)
class ExportEntry(CatalogObject):
    """Exactly one of `to_table` and `to_volume` is set; `key` is the source's primary key when
    the export was created, which its records lead with."""

    NAMESPACE: ClassVar[str] = EXPORT
    LABEL: ClassVar[str] = "changelog export"
    SHOW: ClassVar[str] = "SHOW CHANGELOG EXPORTS"
    CREATE: ClassVar[str] = "CREATE CHANGELOG EXPORT"
    REFERENCES: ClassVar[dict[str, str]] = {
        "source": RELATION,
        "to_table": RELATION,
        "status_table": RELATION,
        "to_volume": "volume",
    }

    source: str = ""
    key: tuple[str, ...] = ()
    to_table: str | None = None
    to_volume: str | None = None
    subdirectory: str = ""
    file_format: str = "PARQUET"  # as COPY INTO VOLUME names it
    status_table: str = DEFAULT_STATUS_TABLE
    sequence_info: bool = False
    max_retries: int = DEFAULT_MAX_RETRIES
    comment: str | None = None

    def columns_read(
        self, relation: str, columns_of: Callable[[str], Sequence[str]]
    ) -> frozenset[str]:
        """The key its records lead with: each record names its columns."""
        return frozenset(c.lower() for c in self.key) if relation == self.source else frozenset()

    def reads_changes(self, relation: str) -> bool:
        return relation == self.source

    @property
    def target(self) -> str:
        """Where the records go, as DESC and SHOW name it."""
        if self.to_table is not None:
            return f"TABLE {self.to_table}"
        return f"VOLUME {self.to_volume}" + (
            f" SUBDIRECTORY '{self.subdirectory}'" if self.subdirectory else ""
        )
