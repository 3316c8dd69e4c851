"""A dynamic table as the catalog keeps it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject, StoredRelation
from lake_assets.core.errors import LakeError
from lake_assets.sql.lineage import columns_read
from lake_assets.tables.expectations import Expectation, Quarantined


class SchedulingState(StrEnum):
    """Whether a dynamic table refreshes by itself."""

    ACTIVE = "ACTIVE"
    SUSPENDED = "SUSPENDED"


class RefreshModeChoice(StrEnum):
    """REFRESH_MODE: AUTO picks per refresh; INCREMENTAL refuses a query it cannot maintain."""

    AUTO = "AUTO"
    INCREMENTAL = "INCREMENTAL"
    FULL = "FULL"


@dataclass(frozen=True)
class TargetLag:
    """TARGET_LAG: how far behind its base tables a table may fall (`seconds`), or DOWNSTREAM
    (None): refreshed only when a dynamic table reading it refreshes."""

    seconds: int | None

    @property
    def text(self) -> str:
        if self.seconds is None:
            return "DOWNSTREAM"
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
            if self.seconds % size == 0:
                count = self.seconds // size
                return f"{count} {unit}" if count == 1 else f"{count} {unit}s"
        raise AssertionError("every lag is a whole number of seconds")


DOWNSTREAM = TargetLag(None)


@dataclass(frozen=True)
class DynamicTableEntry(StoredRelation):
    """A Delta table kept equal to its query; `hidden` columns hold aggregate state (not shown);
    `primary_key` is declared for readers (changelog exports), never enforced on refreshes."""

    NAMESPACE: ClassVar[str] = RELATION
    KIND: ClassVar[str] = "dynamic_table"
    LABEL: ClassVar[str] = "dynamic table"
    SHOW: ClassVar[str] = "SHOW DYNAMIC TABLES"
    CREATE: ClassVar[str] = "CREATE DYNAMIC TABLE"
    QUARANTINED: ClassVar[Quarantined] = Quarantined.NEWEST_WRITE
    REFERENCES: ClassVar[dict[str, str]] = {"sources": RELATION}

    query: str
    sources: tuple[str, ...]
    hidden: tuple[str, ...] = ()

    comment: str | None = None
    refresh_interval_seconds: int | None = None
    vcluster: str | None = None
    suspended: bool = False
    refresh_mode: RefreshModeChoice = RefreshModeChoice.AUTO
    # TARGET_LAG in seconds; with `lag_downstream`, DOWNSTREAM. Neither: it refreshes after each
    # change of a source (or on its REFRESH INTERVAL).
    target_lag_seconds: int | None = None
    lag_downstream: bool = False
    # What its rows must satisfy (see expected): DROP ROW ones filter its query, WARN and FAIL
    # ones judge the rows each refresh adds.
    expectations: tuple[Expectation, ...] = ()

    @property
    def target_lag(self) -> TargetLag | None:
        if self.lag_downstream:
            return DOWNSTREAM
        return TargetLag(self.target_lag_seconds) if self.target_lag_seconds else None

    def shown_columns(self) -> list[str]:
        return [column.name for column in self.columns] if self.hidden else []

    def columns_read(
        self, relation: str, columns_of: Callable[[str], Sequence[str]]
    ) -> frozenset[str]:
        return columns_read(self.query, relation, columns_of)

    def mistaken_for(self, wanted: type[CatalogObject]) -> LakeError:
        return LakeError(
            f"{self.name} is a dynamic table: only its refreshes write it",
            "change its query with CREATE OR REPLACE DYNAMIC TABLE, or read it with SELECT",
        )
