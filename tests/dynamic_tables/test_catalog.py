"""The catalog's dynamic tables: registration, OR REPLACE, readers, suspension, refresh history."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESHES, RefreshRecord
from lake_assets.tables.entry import TableEntry

COLUMNS = (Column("category", "STRING", "the key"), Column("n", "BIGINT"))


def dynamic(name: str, location: str = "/w/d-1", sources: tuple[str, ...] = ("t",)):
    return DynamicTableEntry(
        name, location, COLUMNS, "SELECT category, COUNT(*) AS n FROM t GROUP BY category",
        sources, ("__lake_rows",), "summary", 3600, "DEFAULT",
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
    catalog.add(TableEntry("t", "/w/t-1", COLUMNS))
    return catalog


def test_a_dynamic_table_keeps_every_field(catalog):
    assert catalog.add(dynamic("d")).created_at
    found = catalog.get(DynamicTableEntry, "d")
    assert found.query.startswith("SELECT category")
    assert (found.sources, found.columns, found.hidden) == (("t",), COLUMNS, ("__lake_rows",))
    assert (found.refresh_interval_seconds, found.vcluster, found.comment) == (
        3600, "DEFAULT", "summary",
    )  # fmt: skip
    assert not found.suspended
    assert found.created_at
    catalog.record_table_state(found, 4, 3)
    assert (
        catalog.get(DynamicTableEntry, "d").version,
        catalog.get(DynamicTableEntry, "d").row_count,
    ) == (4, 3)
    assert catalog.relation("d") == catalog.get(DynamicTableEntry, "d")
    assert catalog.relation("t").name == "t"
    assert [entry.name for entry in catalog.entries(DynamicTableEntry)] == ["d"]
    assert [entry.name for entry in catalog.entries(TableEntry)] == ["t"]


def test_names_are_shared_with_tables_and_replace_only_replaces_dynamic_tables(catalog):
    with pytest.raises(LakeError, match="table t already exists"):
        catalog.replace(dynamic("t"))
    catalog.add(dynamic("d"))
    with pytest.raises(LakeError, match="dynamic table d already exists"):
        catalog.add(dynamic("d", "/w/d-2"))
    replaced = catalog.replace(dynamic("d", "/w/d-2"))
    assert replaced.location == "/w/d-1"
    assert catalog.get(DynamicTableEntry, "d").location == "/w/d-2"
    with pytest.raises(LakeError, match="d is a dynamic table: only its refreshes write it"):
        catalog.get(TableEntry, "d")


def test_unknown_names_say_how_to_find_them(catalog):
    with pytest.raises(LakeError, match=r"dynamic table x does not exist.*SHOW DYNAMIC TABLES"):
        catalog.get(DynamicTableEntry, "x")
    with pytest.raises(LakeError, match="table x does not exist"):
        catalog.relation("x")
    assert catalog.find(DynamicTableEntry, "x") is None


def suspend(suspended):
    return lambda entry: replace(entry, suspended=suspended)


def test_readers_suspension_and_removal(catalog):
    catalog.add(dynamic("a"))
    catalog.add(dynamic("b", "/w/b-1", sources=("a", "t")))
    assert catalog.users_of(TableEntry, "t") == ["dynamic table a", "dynamic table b"]
    assert catalog.users_of(DynamicTableEntry, "a") == ["dynamic table b"]
    assert catalog.update(DynamicTableEntry, "a", suspend(True)).suspended
    assert catalog.get(DynamicTableEntry, "a").suspended
    assert not catalog.update(DynamicTableEntry, "a", suspend(False)).suspended
    REFRESHES.record(catalog, record("a", "2026-01-01T00:00:00", "r1"))
    assert catalog.remove(DynamicTableEntry, "a").name == "a"
    assert REFRESHES.newest_first(catalog, "a") == []
    assert catalog.remove(DynamicTableEntry, "a") is None


def test_refresh_history_is_newest_first_and_each_refresh_is_recorded_once(catalog):
    catalog.add(dynamic("a"))
    catalog.add(dynamic("b", "/w/b-1"))
    first = record("a", "2026-01-01T00:00:00", "r1", refresh_mode="FULL", reason="initial refresh")
    REFRESHES.record(catalog, first)
    failed = {"state": "FAILED", "refresh_mode": None, "error_message": "boom", "dt_version": None}
    REFRESHES.record(catalog, record("b", "2026-01-01T00:00:01", "r2", **failed))
    REFRESHES.record(catalog, record("a", "2026-01-01T00:00:02", "r3"))
    REFRESHES.record(catalog, record("a", "2026-01-01T00:00:09", "r1", rows_inserted=99))
    assert [r.id for r in REFRESHES.newest_first(catalog, "a")] == ["r3", "r1"]
    assert REFRESHES.newest_first(catalog, "a")[1] == first  # a record is never overwritten
    assert [r.id for r in REFRESHES.newest_first(catalog)] == ["r3", "r2", "r1"]
    assert REFRESHES.newest_first(catalog, "b")[0].source_tables == {"t": 3}
