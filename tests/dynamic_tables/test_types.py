"""Dynamic tables over nested types and unusual names: MAP columns (alone, in an ARRAY, in a
STRUCT) through every incremental path, STRUCT field names kept as written, and source columns
or query names that use the hidden prefix."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession

from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession

SOURCES = """
CREATE TABLE src (id BIGINT, cat STRING, qty INT);
CREATE TABLE dim (cat STRING, w INT);
INSERT INTO src VALUES (1, 'a', 1), (2, 'b', 2), (3, 'a', 3), (4, 'b', 4);
INSERT INTO dim VALUES ('a', 10), ('b', 20);
"""
# A projection over a join whose maps are built in different key orders, and an aggregate keyed
# by a map whose MAX needs its group recomputed when the top row goes.
MAP_QUERIES = {
    "projected": "SELECT s.id, map(s.cat, s.qty, 'z', d.w) AS m, "
    "array(map('k', s.qty), map('y', d.w, 'x', s.qty)) AS maps, "
    "named_struct('inner', map('q', s.cat, 'p', 'x'), 'n', s.qty) AS nested "
    "FROM src s JOIN dim d ON s.cat = d.cat WHERE s.qty > 0",
    "grouped": "SELECT map('c', cat, 'b', 'x') AS m, COUNT(*) AS n, MAX(qty) AS top "
    "FROM src GROUP BY map('c', cat, 'b', 'x')",
}


def canonical(value: Any) -> Any:
    """A hashable value compared as Spark's canonical form does: a map as its sorted entries."""
    if isinstance(value, dict):
        return tuple(sorted((canonical(k), canonical(v)) for k, v in value.items()))
    if isinstance(value, Row):
        return tuple((name, canonical(v)) for name, v in zip(value.__fields__, value, strict=True))
    if isinstance(value, list | tuple):
        return tuple(canonical(v) for v in value)
    return value


def contents(lake: LakeSession, sql: str) -> Counter:
    (result,) = lake.sql(sql)
    return Counter(canonical(tuple(row)) for row in result.rows)


def refreshed_incrementally(spark: SparkSession, lake: LakeSession, name: str) -> None:
    """Refresh `name`: an INCREMENTAL refresh (no silent FULL) leaving what its query gives."""
    outcome = dynamic.refresh(spark, lake.catalog, name)
    assert outcome.mode == RefreshMode.INCREMENTAL, outcome
    query = lake.catalog.get(DynamicTableEntry, name).query
    assert contents(lake, f"SELECT * FROM {name}") == contents(lake, query), name


def test_map_columns_refresh_incrementally_after_deletes_and_key_updates(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql(SOURCES)
    for name, query in MAP_QUERIES.items():
        lake.sql(f"CREATE DYNAMIC TABLE {name} AS {query}")
    for change in (
        "INSERT INTO src VALUES (5, 'c', 5), (6, 'a', 6)",
        "DELETE FROM src WHERE id IN (1, 6)",  # group 'a' loses its MAX
        "UPDATE src SET cat = 'b' WHERE id = 3",  # a key update: rows and groups move
    ):
        lake.sql(change)
        for name in MAP_QUERIES:
            refreshed_incrementally(spark, lake, name)
    assert contents(lake, "SELECT n, top FROM grouped") == Counter({(3, 4): 1, (1, 5): 1})


def test_struct_field_names_are_kept_as_written(spark: SparkSession, lake: LakeSession) -> None:
    lake.sql(SOURCES)
    query = "SELECT id, named_struct('lower', qty, 'Mixed', cat, 'UP', id) AS st FROM src"
    lake.sql(f"CREATE DYNAMIC TABLE structs AS {query}")
    location = lake.catalog.get(DynamicTableEntry, "structs").location
    as_json = "SELECT id, to_json(st) FROM {}"
    for step in ("created", "refreshed"):
        if step == "refreshed":
            lake.sql("INSERT INTO src VALUES (5, 'c', 5)")
            refreshed_incrementally(spark, lake, "structs")
        stored = spark.read.format("delta").load(location).schema["st"].dataType
        assert stored.fieldNames() == ["lower", "Mixed", "UP"], step
        assert contents(lake, as_json.format("structs")) == contents(
            lake, as_json.format(f"({query})")
        ), step
    assert contents(lake, "SELECT to_json(st) FROM structs WHERE id = 1") == Counter(
        {('{"lower":1,"Mixed":"a","UP":1}',): 1}
    )
    (describe,) = lake.sql("DESC DYNAMIC TABLE structs")
    columns = dict(describe.rows)["columns"]
    assert columns == "id BIGINT, st STRUCT<`lower`:INT,`Mixed`:STRING,`UP`:BIGINT>"


def test_source_columns_with_the_hidden_prefix_do_not_collide(
    spark: SparkSession, lake: LakeSession
) -> None:
    """A source's own columns may use the hidden names a refresh gives its working columns."""
    lake.sql(
        "CREATE TABLE odd (id BIGINT, __lake_mult INT, __lake_copy STRING);"
        "INSERT INTO odd VALUES (1, 7, 'x'), (2, 8, 'y')"
    )
    lake.sql("CREATE DYNAMIC TABLE plain AS SELECT id FROM odd WHERE id > 0")
    lake.sql("CREATE DYNAMIC TABLE counted AS SELECT id, COUNT(*) AS n FROM odd GROUP BY id")
    for change in (
        "INSERT INTO odd VALUES (3, 9, 'z'), (3, 9, 'z')",
        "DELETE FROM odd WHERE id = 1",
        "UPDATE odd SET id = 4 WHERE id = 2",
    ):
        lake.sql(change)
        for name in ("plain", "counted"):
            refreshed_incrementally(spark, lake, name)
    assert contents(lake, "SELECT * FROM plain") == Counter({(3,): 2, (4,): 1})


@pytest.mark.parametrize(
    "query",
    [
        "SELECT id AS __lake_mult FROM src",
        "SELECT __lake_mult AS m FROM src",
        "SELECT k, COUNT(*) AS n FROM src AS __lake_r GROUP BY k",
    ],
)
def test_a_query_naming_anything_with_the_hidden_prefix_is_refused(query: str) -> None:
    with pytest.raises(LakeError) as caught:
        parse_statement(f"CREATE DYNAMIC TABLE d AS {query}")
    assert "names starting with __lake_ are the lakehouse's own" in caught.value.what
    assert "dynamic table d" in caught.value.what
