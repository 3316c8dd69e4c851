"""A view in the Dagster definitions, without Spark: it has no data, so no asset; a dynamic table
that reads it depends on the tables the view reads."""

from __future__ import annotations

from pathlib import Path

from dagster import AssetKey

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.tables.entry import TableEntry
from lake_assets.views.entry import ViewEntry

A = (Column("a", "INT"),)


def test_a_dynamic_table_over_views_depends_on_the_views_tables(tmp_path: Path) -> None:
    settings = LakeSettings(lake_home=tmp_path)
    catalog = Catalog(settings.catalog_location)
    catalog.add(TableEntry("t", "/w/t", A))
    catalog.add(TableEntry("u", "/w/u", A))
    catalog.add(ViewEntry("v", "SELECT a FROM t", ("t",), A))
    catalog.add(ViewEntry("w", "SELECT v.a FROM v JOIN u ON v.a = u.a", ("v", "u"), A))
    catalog.add(DynamicTableEntry("d", "/w/d", A, "SELECT a FROM w", ("w",)))
    graph = build_definitions(settings).resolve_asset_graph()
    assert graph.get(AssetKey("d")).parent_keys == {AssetKey("t"), AssetKey("u")}
    assert not graph.has(AssetKey("v"))
    assert not graph.has(AssetKey("w"))
