"""Dynamic tables' refresh history: each refresh's record rides in its commit (or, for a refresh
that committed nothing, is recorded alone) and is indexed here for SHOW REFRESH HISTORY."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import sqlalchemy as sa

from lake_assets.core.database import TEXT, owned_table
from lake_assets.core.entries import RELATION
from lake_assets.core.history import History

# The first key of a refresh commit's record.
REFRESH_MARKER = "lake_refresh"


class RefreshState(StrEnum):
    """How a dynamic table's refresh ended."""

    SUCCEED = "SUCCEED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class RefreshMode(StrEnum):
    INCREMENTAL = "INCREMENTAL"
    FULL = "FULL"
    NO_DATA = "NO_DATA"


class RefreshTrigger(StrEnum):
    """Who asked for a refresh: its creation, a person, its interval, or a source's change."""

    CREATION = "CREATION"
    MANUAL = "MANUAL"
    SCHEDULED = "SCHEDULED"
    UPSTREAM = "UPSTREAM"


@dataclass(frozen=True)
class RefreshRecord:
    """One refresh of a dynamic table: SUCCEED, FAILED or SKIPPED, and what it read and wrote."""

    id: str
    name: str
    state: RefreshState
    refresh_mode: RefreshMode | None
    refresh_trigger: RefreshTrigger
    start_time: str
    end_time: str
    duration: float
    source_tables: dict[str, int]
    rows_inserted: int | None = None
    rows_deleted: int | None = None
    error_message: str | None = None
    reason: str | None = None
    dt_version: int | None = None


REFRESHES = History(
    owned_table(
        "refresh_history",
        (RELATION, "name"),
        sa.Column("id", TEXT, primary_key=True),
        sa.Column("name", TEXT, nullable=False),
        sa.Column("state", TEXT, nullable=False),
        sa.Column("refresh_mode", TEXT),
        sa.Column("refresh_trigger", TEXT, nullable=False),
        sa.Column("start_time", TEXT, nullable=False),
        sa.Column("end_time", TEXT, nullable=False),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("source_tables", TEXT, nullable=False),
        sa.Column("rows_inserted", sa.BigInteger),
        sa.Column("rows_deleted", sa.BigInteger),
        sa.Column("error_message", TEXT),
        sa.Column("reason", TEXT),
        sa.Column("dt_version", sa.BigInteger),
        sa.Index("refresh_history_by_name", "name", "start_time"),
    ),
    RefreshRecord,
    newest=("start_time",),
)
