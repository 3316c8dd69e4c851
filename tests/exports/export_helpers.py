"""What the changelog export tests share: columns, the keyed source, commit times, statements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lake_assets.core.delta import history
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry

RESULT = [
    "export",
    "range",
    "first_version",
    "last_version",
    "records",
    "U",
    "DO",
    "DA",
    "DR",
    "versions_read",
    "complete",
]
STATUS = "SELECT export, source, range_start, range_end, first_version, last_version, complete, "
STATUS += "records, versions_read FROM {table} ORDER BY exported_at"
KEYED = (
    "CREATE TABLE t (k INT, a STRING, b STRING, PRIMARY KEY (k)); "
    "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"
)
DAY = timedelta(days=1)


def millis(moment: datetime) -> int:
    """A naive UTC commit time in epoch milliseconds."""
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def commit_times(lake: LakeSession, table: str) -> dict[int, int]:
    """The table's versions and their commit times in ms, from its Delta log."""
    entry = lake.catalog.relation(table)
    assert isinstance(entry, TableEntry | DynamicTableEntry)
    return {commit.version: millis(commit.timestamp) for commit in history(None, entry.location)}


def latest(lake: LakeSession, table: str) -> int:
    return max(commit_times(lake, table))


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def run(lake: LakeSession, sql: str) -> dict[str, Any]:
    """EXPORT CHANGELOG's one result row, by column."""
    (result,) = lake.sql(sql)
    assert result.columns == RESULT
    (row,) = result.rows
    return dict(zip(RESULT, row, strict=True))


def ranged(name: str, start: int, end: int) -> str:
    return (
        f"EXPORT CHANGELOG {name} "
        f"(START_TIMESTAMP_MILLIS => {start}, END_TIMESTAMP_MILLIS => {end})"
    )


def message(lake: LakeSession, sql: str) -> str:
    (result,) = lake.sql(sql)
    assert result.message is not None
    return result.message


def records(lake: LakeSession, table: str, where: str = "TRUE") -> list[tuple]:
    """A target's records (key, column_name, version, column_value, op_type) in commit order."""
    return rows(
        lake,
        f"SELECT k, column_name, version, column_value, op_type FROM {table} WHERE {where} "
        "ORDER BY version, k, column_name",
    )


def status(lake: LakeSession, table: str = "lake_changelog_status") -> list[tuple]:
    return rows(lake, STATUS.format(table=table))
