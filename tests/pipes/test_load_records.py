"""The load-history index without Spark: a rejected record is shown as long as its file's load
record is, and recorded once however often a commit's records are indexed."""

from __future__ import annotations

from pathlib import Path

from lake_assets.core.catalog import Catalog
from lake_assets.pipes.load_records import (
    LoadRecord,
    LoadStatus,
    RejectedRow,
    record_loads,
    rejected_rows,
)


def test_rejected_records_expire_with_their_load_and_are_recorded_once(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    loads = [
        LoadRecord(name, time, 10, "m", LoadStatus.PARTIALLY_LOADED, 2, None, None, version, 1)
        for name, time, version in (("old.csv", "2026-01-01", 1), ("new.csv", "2026-06-01", 2))
    ]
    rejected = [
        RejectedRow(name, 3, "amount", "bad", "1,x", None, version)
        for name, version in (("old.csv", 1), ("new.csv", 2))
    ]
    for _ in range(2):  # a commit's records indexed again, as reconcile may
        record_loads(catalog, "t", loads, 2, rejected)
    assert [r.file_path for r in rejected_rows(catalog, "t")] == ["new.csv", "old.csv"]
    assert rejected_rows(catalog, "t", "2026-03-01") == [rejected[1]]
