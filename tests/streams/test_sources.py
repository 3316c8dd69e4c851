"""What a stream can read, found through the catalog's registry of kinds: each source kind the
grammar names is a registered entry kind, a relation's source is its Delta table and columns, a
volume's its directory table, and a name of another source kind is found so the mix-up can be
named. On a real SQLite catalog, without Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

import lake_assets.kinds  # noqa: F401  (each kind's entry registers itself, as in every session)
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject, Column
from lake_assets.core.errors import LakeError
from lake_assets.streams.grammar import SOURCE_KINDS
from lake_assets.streams.sources import change_source, find_source, source_type
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import DIRECTORY_SCHEMA

COLUMNS = (Column("id", "BIGINT"), Column("total", "BIGINT"))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    catalog = Catalog(str(tmp_path / "catalog.db"))
    dynamic = CatalogObject.KINDS["dynamic_table"]
    catalog.add(TableEntry(name="t", location="/warehouse/t", columns=COLUMNS))
    catalog.add(
        dynamic(name="d", location="/warehouse/d", columns=COLUMNS, query="q", sources=("t",))
    )
    catalog.add(VolumeEntry(name="v", location="file:///v/", directory_location="/warehouse/v"))
    return catalog


@pytest.mark.parametrize("kind", sorted(set(SOURCE_KINDS.values())))
def test_each_source_kind_the_grammar_names_is_a_registered_entry_kind(kind: str) -> None:
    assert source_type(kind).kind() == kind


def test_a_dynamic_tables_source_is_its_delta_table_and_columns(catalog: Catalog) -> None:
    found = find_source(catalog, "dynamic_table", "d")
    assert isinstance(found, source_type("dynamic_table"))
    source = change_source(found)
    assert (source.location, source.columns, source.label) == (
        "/warehouse/d", ("id", "total"), "dynamic table",
    )  # fmt: skip


def test_a_volumes_source_is_its_directory_table(catalog: Catalog) -> None:
    found = find_source(catalog, "volume", "v")
    assert found is not None
    source = change_source(found)
    assert (source.location, source.columns) == ("/warehouse/v", tuple(DIRECTORY_SCHEMA.names))


def test_a_name_of_another_source_kind_is_found_so_the_mix_up_can_be_named(
    catalog: Catalog,
) -> None:
    assert isinstance(find_source(catalog, "table", "v"), VolumeEntry)
    assert isinstance(find_source(catalog, "volume", "d"), source_type("dynamic_table"))
    assert find_source(catalog, "volume", "nope") is None


def test_a_volume_without_a_directory_table_is_no_source(catalog: Catalog) -> None:
    bare = VolumeEntry(name="b", location="file:///b/", directory_enabled=False)
    with pytest.raises(LakeError, match="volume b has no directory table"):
        change_source(bare)
