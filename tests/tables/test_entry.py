"""A table's catalog entry: the declared primary key and clustering, their checks, and rows stored
before either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.tables.entry import TableEntry, clustering_columns, declared_key

COLUMNS = (Column("Id", "BIGINT"), Column("tags", "ARRAY<STRING>"), Column("dt", "DATE"))


def test_the_key_is_kept_and_read_back_as_a_tuple(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(TableEntry("t", "/w/t-1", COLUMNS, primary_key=("Id", "dt")))
    assert catalog.get(TableEntry, "t").primary_key == ("Id", "dt")


def test_a_row_stored_before_keys_loads_without_one_and_unclustered() -> None:
    spec = json.dumps(
        {"location": "/w/t-1", "columns": [{"name": "id", "type": "INT", "comment": None}]}
    )
    entry = TableEntry.from_spec("t", "2026-01-01T00:00:00.000+00:00", spec)
    assert isinstance(entry, TableEntry)
    assert entry.primary_key == ()
    assert entry.cluster_by == ()
    assert entry.columns == (Column("id", "INT"),)


def test_the_key_is_part_of_the_declared_spec() -> None:
    """The code server's fingerprint reads the declared spec: a key change reloads definitions."""
    keyed = TableEntry("t", "/w/t-1", COLUMNS, primary_key=("Id",))
    declared = json.loads(keyed.to_spec(declared_only=True))
    assert declared["primary_key"] == ["Id"]
    assert keyed.to_spec(declared_only=True) != TableEntry("t", "/w/t-1", COLUMNS).to_spec(
        declared_only=True
    )


def test_declared_key_matches_case_insensitively_and_keeps_the_declared_spelling() -> None:
    assert declared_key("table t", COLUMNS, ("DT", "id")) == ("dt", "Id")


@pytest.mark.parametrize(
    ("column_type", "shown"),
    [
        ("ARRAY<STRING>", "ARRAY<STRING>"),
        ("MAP<STRING,INT>", "MAP<STRING,INT>"),
        ("struct<a:int>", "struct<a:int>"),
        ("VARIANT", "VARIANT"),
    ],
)
def test_a_complex_column_cannot_be_a_key_column(column_type: str, shown: str) -> None:
    with pytest.raises(LakeError) as raised:
        declared_key("dynamic table d", (Column("Id", "BIGINT"), Column("x", column_type)), ["X"])
    assert raised.value.what == (
        f"primary key column x of dynamic table d is {shown}: a key column must be of an atomic "
        "type"
    )
    assert raised.value.fix.startswith("key the table by columns of atomic types")


def test_an_unknown_key_column_is_named_with_the_columns() -> None:
    with pytest.raises(LakeError) as raised:
        declared_key("table t", COLUMNS, ("id", "day"))
    assert raised.value.what == "primary key column day is not a column of table t"
    assert raised.value.fix == "choose among its columns: Id, tags, dt"


def test_the_clustering_is_kept_and_part_of_the_declared_spec(tmp_path: Path) -> None:
    """A layout change reloads the definitions, as a key change does."""
    catalog = Catalog(tmp_path / "catalog.db")
    clustered = catalog.add(TableEntry("t", "/w/t-1", COLUMNS, cluster_by=("dt", "Id")))
    assert catalog.get(TableEntry, "t").cluster_by == ("dt", "Id")
    assert json.loads(clustered.to_spec(declared_only=True))["cluster_by"] == ["dt", "Id"]


@pytest.mark.parametrize("column_type", ["ARRAY<STRING>", "MAP<STRING,INT>", "VARIANT", "BINARY"])
def test_files_are_not_clustered_by_a_column_without_statistics(column_type: str) -> None:
    with pytest.raises(LakeError) as raised:
        clustering_columns("table t", (Column("Id", "BIGINT"), Column("x", column_type)), ["X"])
    assert raised.value.what == (
        f"clustering column x of table t is {column_type}: files are clustered by numbers, "
        "strings, dates and timestamps only"
    )
