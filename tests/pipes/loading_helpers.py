"""What the loading tests share: the COPY they run, its no-change message, and what they check."""

from __future__ import annotations

from lake_assets.pipes.load_records import LoadRecord, load_history
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import rows

COPY = "COPY INTO t FROM VOLUME v USING CSV"
NO_CHANGE = "COPY: 0 files loaded (0 rows), 0 failed, 0 purged"


def assert_catalog_matches(lake: LakeSession, table: str, version: int, count: int) -> None:
    """The catalog's version and row count (SHOW TABLES, Dagster metadata) are the table's."""
    entry = lake.catalog.get(TableEntry, table)
    assert (entry.version, entry.row_count) == (version, count)
    assert rows(lake, f"SELECT COUNT(*) FROM {table}") == [(count,)]


def records_by_name(lake: LakeSession, table: str) -> dict[str, LoadRecord]:
    return {r.file_path.rsplit("/", 1)[-1]: r for r in load_history(lake.catalog, table)}
