"""The catalog's dynamic tables: registration, OR REPLACE, readers, suspension, refresh history."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.core.catalog import Catalog, Column, DynamicTableEntry, RefreshRecord, TableEntry
from lake_assets.core.errors import LakeError

COLUMNS = (Column("category", "STRING", "the key"), Column("n", "BIGINT"))


def dynamic(name: str, location: str = "/w/d-1", sources: tuple[str, ...] = ("t",)):
    return DynamicTableEntry(
        name, location, "SELECT category, COUNT(*) AS n FROM t GROUP BY category", sources,
        COLUMNS, ("__lake_rows",), "summary", 3600, "DEFAULT",
    )  # fmt: skip


def record(name: str, start: str, id: str, **changes) -> RefreshRecord:
    values = dict(
        id=id, name=name, state="SUCCEED", refresh_mode="INCREMENTAL", refresh_trigger="MANUAL",
        start_time=start, end_time=start, duration=0.5, source_tables={"t": 3},
        rows_inserted=1, rows_deleted=0, dt_version=2,
    )  # fmt: skip
    return RefreshRecord(**{**values, **changes})


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add_table(TableEntry("t", "/w/t-1", COLUMNS))
    return catalog


def test_a_dynamic_table_keeps_every_field(catalog):
    assert catalog.add_dynamic_table(dynamic("d")) is None
    found = catalog.dynamic_table("d")
    assert found.query.startswith("SELECT category")
    assert (found.sources, found.columns, found.hidden) == (("t",), COLUMNS, ("__lake_rows",))
    assert (found.refresh_interval_seconds, found.vcluster, found.comment) == (
        3600, "DEFAULT", "summary",
    )  # fmt: skip
    assert not found.suspended
    assert found.created_at
    catalog.record_table_state(found, 4, 3)
    assert (catalog.dynamic_table("d").version, catalog.dynamic_table("d").row_count) == (4, 3)
    assert catalog.relation("d") == catalog.dynamic_table("d")
    assert catalog.relation("t").name == "t"
    assert [entry.name for entry in catalog.dynamic_tables()] == ["d"]
    assert [entry.name for entry in catalog.tables()] == ["t"]


def test_names_are_shared_with_tables_and_replace_only_replaces_dynamic_tables(catalog):
    with pytest.raises(LakeError, match="table t already exists"):
        catalog.add_dynamic_table(dynamic("t"), replace_existing=True)
    catalog.add_dynamic_table(dynamic("d"))
    with pytest.raises(LakeError, match="dynamic table d already exists"):
        catalog.add_dynamic_table(dynamic("d", "/w/d-2"))
    replaced = catalog.add_dynamic_table(dynamic("d", "/w/d-2"), replace_existing=True)
    assert replaced.location == "/w/d-1"
    assert catalog.dynamic_table("d").location == "/w/d-2"
    with pytest.raises(LakeError, match="d is a dynamic table: only its refreshes write it"):
        catalog.table("d")


def test_unknown_names_say_how_to_find_them(catalog):
    with pytest.raises(LakeError, match=r"dynamic table x does not exist.*SHOW DYNAMIC TABLES"):
        catalog.dynamic_table("x")
    with pytest.raises(LakeError, match="table x does not exist"):
        catalog.relation("x")
    assert catalog.find_dynamic_table("x") is None


def test_readers_suspension_and_removal(catalog):
    catalog.add_dynamic_table(dynamic("a"))
    catalog.add_dynamic_table(dynamic("b", "/w/b-1", sources=("a", "t")))
    assert catalog.dynamic_readers("t") == ["a", "b"]
    assert catalog.dynamic_readers("a") == ["b"]
    assert catalog.set_suspended("a", True).suspended
    assert catalog.dynamic_table("a").suspended
    assert not catalog.set_suspended("a", False).suspended
    catalog.record_refresh(record("a", "2026-01-01T00:00:00", "r1"))
    assert catalog.remove_dynamic_table("a").name == "a"
    assert catalog.refresh_history("a") == []
    assert catalog.remove_dynamic_table("a") is None


def test_refresh_history_is_newest_first_and_each_refresh_is_recorded_once(catalog):
    catalog.add_dynamic_table(dynamic("a"))
    catalog.add_dynamic_table(dynamic("b", "/w/b-1"))
    first = record("a", "2026-01-01T00:00:00", "r1", refresh_mode="FULL", reason="initial refresh")
    catalog.record_refresh(first)
    failed = {"state": "FAILED", "refresh_mode": None, "error_message": "boom", "dt_version": None}
    catalog.record_refresh(record("b", "2026-01-01T00:00:01", "r2", **failed))
    catalog.record_refresh(record("a", "2026-01-01T00:00:02", "r3"))
    catalog.record_refresh(record("a", "2026-01-01T00:00:09", "r1", rows_inserted=99))
    assert [r.id for r in catalog.refresh_history("a")] == ["r3", "r1"]
    assert catalog.refresh_history("a")[1] == first  # a record is never overwritten
    assert [r.id for r in catalog.refresh_history()] == ["r3", "r2", "r1"]
    assert catalog.refresh_history("b")[0].source_tables == {"t": 3}
