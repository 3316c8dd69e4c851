"""CREATE DYNAMIC TABLE leaves nothing behind when it fails, whatever the failure (or leaves the
table it was to replace as it was), and its cycle check holds when its entry is written."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables import engine
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.session import LakeSession


def _folders(lake: LakeSession, name: str) -> list[str]:
    """The warehouse folders of the tables called `name` (one per CREATE)."""
    return sorted(
        p.name for p in lake.settings.warehouse.iterdir() if p.name.startswith(f"{name}-")
    )


def _broken_first_write(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the first write broke")


def test_a_create_that_fails_with_any_error_leaves_nothing_behind(
    lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake.sql("CREATE TABLE t (id BIGINT); INSERT INTO t VALUES (1)")
    lake.sql("CREATE DYNAMIC TABLE kept AS SELECT id FROM t")
    kept = lake.catalog.get(DynamicTableEntry, "kept")
    monkeypatch.setattr(engine, "refresh", _broken_first_write)

    with pytest.raises(RuntimeError, match="the first write broke"):
        lake.sql("CREATE DYNAMIC TABLE d AS SELECT id FROM t")
    assert lake.catalog.find_relation("d") is None
    assert _folders(lake, "d") == []

    # OR REPLACE: the replaced table is back as it was, and the new one's files are gone.
    with pytest.raises(RuntimeError, match="the first write broke"):
        lake.sql("CREATE OR REPLACE DYNAMIC TABLE kept AS SELECT id + 1 AS id FROM t")
    assert lake.catalog.get(DynamicTableEntry, "kept") == kept
    assert _folders(lake, "kept") == [kept.location.rsplit("/", 1)[-1]]


def test_the_cycle_check_holds_when_the_entry_is_written(
    lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another session makes b read a after this CREATE checked for cycles but before it
    writes a's entry: the write's own check refuses the cycle."""
    lake.sql(
        "CREATE TABLE t (id BIGINT); CREATE DYNAMIC TABLE a AS SELECT id FROM t; "
        "CREATE DYNAMIC TABLE b AS SELECT id FROM t"
    )
    before = lake.catalog.get(DynamicTableEntry, "a")
    register = Catalog.replace

    def b_reads_a_first(catalog: Catalog, entry: Any, *args: Any) -> Any:
        if entry.name == "a":
            b = catalog.get(DynamicTableEntry, "b")
            register(catalog, replace(b, sources=("a",), query="SELECT id FROM a"))
        return register(catalog, entry, *args)

    monkeypatch.setattr(Catalog, "replace", b_reads_a_first)
    with pytest.raises(LakeError, match="dynamic table a would read itself: a → b → a"):
        lake.sql("CREATE OR REPLACE DYNAMIC TABLE a AS SELECT id FROM b")
    assert lake.catalog.get(DynamicTableEntry, "a") == before
    assert _folders(lake, "a") == [before.location.rsplit("/", 1)[-1]]
