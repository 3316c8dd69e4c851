"""A view read where a query is analysed (a dynamic table's): inlined as its query under its own
name, views over views too, and what it reads in the end; Spark-free."""

from __future__ import annotations

import pytest
import sqlglot

from lake_assets.core.entries import CatalogObject, Column
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.tables.entry import TableEntry
from lake_assets.views.entry import ViewEntry
from lake_assets.views.reading import base_relations, inline_views, refuse_cycle, views_read

A = (Column("a", "INT"),)
CATALOG: dict[str, CatalogObject] = {
    "t": TableEntry("t", "/w/t", A),
    "u": TableEntry("u", "/w/u", A),
    "v": ViewEntry("v", "SELECT a FROM t WHERE a > 1", ("t",), A),
    "w": ViewEntry("w", "SELECT v.a FROM v JOIN u ON v.a = u.a", ("v", "u"), A),
    "d": DynamicTableEntry("d", "/w/d", A, "SELECT a FROM w", ("w",)),
}


def inlined(query: str) -> str:
    return inline_views(sqlglot.parse_one(query, read="spark"), CATALOG.get).sql("spark")


def test_a_view_is_its_query_under_its_name_or_the_alias_it_is_read_by() -> None:
    assert inlined("SELECT * FROM v") == "SELECT * FROM (SELECT a FROM t WHERE a > 1) AS v"
    assert inlined("SELECT x.a FROM v AS x") == (
        "SELECT x.a FROM (SELECT a FROM t WHERE a > 1) AS x"
    )


def test_views_over_views_are_inlined_all_the_way_down() -> None:
    assert inlined("SELECT a FROM w") == (
        "SELECT a FROM (SELECT v.a FROM (SELECT a FROM t WHERE a > 1) AS v "
        "JOIN u ON v.a = u.a) AS w"
    )


def test_a_cte_of_the_view_s_name_is_not_the_view() -> None:
    assert inlined("WITH v AS (SELECT 1 AS a) SELECT a FROM v") == (
        "WITH v AS (SELECT 1 AS a) SELECT a FROM v"
    )


def test_the_relations_read_in_the_end_and_the_views_on_the_way() -> None:
    assert base_relations(("w", "t"), CATALOG.get) == ("t", "u")
    assert [view.name for view in views_read(("w",), CATALOG.get)] == ["w", "v"]
    assert views_read(("t", "d"), CATALOG.get) == []


def test_a_way_back_is_found_through_views_and_dynamic_tables() -> None:
    refuse_cycle("dynamic table", "d", ("w",), CATALOG.get, "fix")  # no way back: no error
    # v reading d would close d → w → v → d.
    with pytest.raises(LakeError) as caught:
        refuse_cycle("view", "v", ("d",), CATALOG.get, "read the tables")
    assert str(caught.value) == "view v would read itself: v → d → w → v — read the tables"
