"""standard_merge on real Spark + Delta: the consumer MERGE runs; accepted MERGEs keep results."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot
from pyspark.sql import SparkSession
from sqlglot import exp

from lake_assets.core.delta import delta_ref
from lake_assets.sql.merge import standard_merge
from lake_assets.sql.subqueries import subquery_merge

COLUMNS = ["id", "name", "age"]
TARGET_ROWS = [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40)]

CONSUMER_MERGE = (
    "MERGE INTO test_table_offset_consume target USING test_table_offset_stream source_stream "
    "ON target.id = source_stream.id "
    "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' "
    "THEN update set target.age = source_stream.age "
    "WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
    "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' "
    "THEN INSERT {columns}VALUES (source_stream.id, source_stream.name, source_stream.age)"
)
STREAM_ROWS = """
    (1, 'a', 10, 'UPDATE_BEFORE'), (1, 'a', 11, 'UPDATE_AFTER'),
    (2, 'b', 20, 'DELETE'), (6, 'f', 60, 'INSERT'),
    (3, 'c', 30, 'UPDATE_BEFORE'), (3, 'c', 30, 'UPDATE_BEFORE'), (7, 'g', 70, 'UPDATE_BEFORE')
"""
CHANGE_ROWS = """
    (1, 'a2', NULL, 'U'), (2, 'b2', 25, 'D'), (3, 'c2', 35, 'X'),
    (5, 'e', 50, 'I'), (6, 'f', NULL, 'I'), (8, 'h', 80, 'X')
"""


def bound(text: str, locations: dict[str, Path]) -> exp.Expression:
    """The statement with each named table read from its Delta path, under its old name or
    alias."""
    statement = sqlglot.parse_one(text, read="spark")
    for table in list(statement.find_all(exp.Table)):
        location = locations.get(table.name)
        if location is not None:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(table.alias_or_name)))
            table.set("this", exp.to_identifier(str(location), quoted=True))
            table.set("db", exp.to_identifier("delta"))
    return statement


def located(text: str, locations: dict[str, Path]) -> exp.Merge:
    merge = bound(text, locations)
    assert isinstance(merge, exp.Merge)
    return merge


def create(spark: SparkSession, path: Path, columns: str, rows: str) -> None:
    """A Delta table in one commit; NULLs take their column's type from the other rows."""
    spark.sql(
        f"CREATE TABLE {delta_ref(str(path))} USING delta "
        f"AS SELECT * FROM VALUES {rows} AS v({columns})"
    )


def create_target(spark: SparkSession, path: Path) -> None:
    values = ", ".join(f"({id_}, '{name}', {age})" for id_, name, age in TARGET_ROWS)
    create(spark, path, "id, name, age", values)


def contents(spark: SparkSession, path: Path) -> list[tuple]:
    return sorted(
        tuple(row) for row in spark.sql(f"SELECT * FROM {delta_ref(str(path))}").collect()
    )


@pytest.fixture(scope="module")
def changes(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One change table the accepted MERGEs read: ids unique, ages NULL for some rows."""
    path = tmp_path_factory.mktemp("changes") / "changes"
    create(spark, path, "id, name, age, op", CHANGE_ROWS)
    return path


def test_the_consumer_merge_runs_on_delta_only_once_idle_source_rows_are_dropped(
    spark: SparkSession, tmp_path: Path
):
    locations = {
        "test_table_offset_consume": tmp_path / "consume",
        "test_table_offset_stream": tmp_path / "stream",
    }
    create_target(spark, locations["test_table_offset_consume"])
    create(
        spark,
        locations["test_table_offset_stream"],
        "id, name, age, __change_type",
        STREAM_ROWS,
    )
    as_written = located(CONSUMER_MERGE.format(columns="(id, name, age) "), locations)
    with pytest.raises(Exception, match="MULTIPLE_SOURCE_ROW"):
        spark.sql(as_written.sql("spark"))
    assert contents(spark, locations["test_table_offset_consume"]) == TARGET_ROWS

    merge = standard_merge(located(CONSUMER_MERGE.format(columns=""), locations), COLUMNS)
    spark.sql(merge.sql("spark"))
    assert contents(spark, locations["test_table_offset_consume"]) == [
        (1, "a", 11),
        (3, "c", 30),
        (4, "d", 40),
        (6, "f", 60),
    ]


@pytest.mark.parametrize(
    ("whens", "rewrites"),
    [
        ("WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", False),
        (
            "WHEN MATCHED AND t.age > 15 THEN DELETE "
            "WHEN NOT MATCHED AND s.op = 'I' THEN INSERT (id, name, age) VALUES (s.id, s.name, 0)",
            False,
        ),
        ("WHEN MATCHED AND s.op = 'D' THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE", False),
        (
            "WHEN MATCHED AND s.op = 'U' THEN UPDATE SET t.name = s.name "
            "WHEN MATCHED AND s.op = 'D' THEN DELETE "
            "WHEN NOT MATCHED AND s.op = 'I' THEN INSERT *",
            True,
        ),
        (
            "WHEN MATCHED AND s.age > 20 THEN UPDATE SET t.age = s.age "
            "WHEN NOT MATCHED AND s.age IS NOT NULL THEN INSERT *",
            True,
        ),
        (
            "WHEN MATCHED AND s.age < 30 OR s.age IS NULL THEN DELETE "
            "WHEN NOT MATCHED AND NOT (s.age > 55) THEN INSERT *",
            True,
        ),
    ],
)
def test_a_merge_delta_accepts_gives_the_same_rows_after_the_rewrite(
    spark: SparkSession, tmp_path: Path, changes: Path, whens: str, rewrites: bool
):
    text = f"MERGE INTO target t USING changes s ON t.id = s.id {whens}"
    as_written, rewritten = tmp_path / "as_written", tmp_path / "rewritten"
    for path in (as_written, rewritten):
        create_target(spark, path)
    original = located(text, {"target": as_written, "changes": changes})
    merge = standard_merge(located(text, {"target": rewritten, "changes": changes}), COLUMNS)
    assert isinstance(merge.args["using"], exp.Subquery) is rewrites

    spark.sql(original.sql("spark"))
    spark.sql(merge.sql("spark"))
    assert contents(spark, rewritten) == contents(spark, as_written)
    assert contents(spark, as_written) != TARGET_ROWS


# UPDATE and DELETE with subqueries, run as the MERGE sql.subqueries makes of them: the rows
# they change are those a SELECT with the same WHERE returns, NULLs and duplicates included.
NULL_TARGET_ROWS = "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40), (NULL, 'e', 50)"
KEY_ROWS = "(1, 10), (1, 10), (3, NULL), (NULL, 40), (5, 50)"
CONDITIONS = [
    "id IN (SELECT id FROM keys)",
    "id IN (SELECT id FROM keys) AND age > 15",
    "(id, age) IN (SELECT id, age FROM keys)",
    "EXISTS (SELECT 1 FROM keys k WHERE k.id = t.id AND k.age IS NOT NULL)",
    "NOT EXISTS (SELECT 1 FROM keys k WHERE k.id = t.id)",
    "NOT EXISTS (SELECT 1 FROM keys k WHERE k.age = t.age) AND id > 1",
    "EXISTS (SELECT 1 FROM keys WHERE id > 4)",
    "EXISTS (SELECT 1 FROM keys WHERE id > 100)",
    "age IN (SELECT k.age FROM keys k WHERE k.id = t.id)",
    "id IN (SELECT id FROM keys) AND EXISTS (SELECT 1 FROM keys k WHERE k.age = t.age)",
    "id IN (SELECT id + 1 FROM target WHERE age > 20)",
]


@pytest.fixture(scope="module")
def keys(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keys with a duplicate row and NULLs in both columns."""
    path = tmp_path_factory.mktemp("keys") / "keys"
    create(spark, path, "id, age", KEY_ROWS)
    return path


def run(spark: SparkSession, text: str, locations: dict[str, Path]) -> list[tuple]:
    """The statement's rows, sorted (NULLs too), after sql.subqueries' rewrite."""
    statement = subquery_merge(bound(text, locations))
    return sorted((tuple(row) for row in spark.sql(statement.sql("spark")).collect()), key=repr)


@pytest.mark.parametrize("operation", ["DELETE FROM", "UPDATE"])
@pytest.mark.parametrize("condition", CONDITIONS)
def test_update_and_delete_with_subqueries_change_the_rows_select_finds(
    spark: SparkSession, tmp_path: Path, keys: Path, condition: str, operation: str
):
    locations = {"target": tmp_path / "target", "keys": keys}
    create(spark, locations["target"], "id, name, age", NULL_TARGET_ROWS)
    kept = run(spark, "SELECT * FROM target", locations)
    found = run(spark, f"SELECT * FROM target AS t WHERE {condition}", locations)
    for row in found:
        kept.remove(row)
    changed = [] if operation == "DELETE FROM" else [(i, name, -1) for i, name, _ in found]
    assignment = " SET age = -1" if operation == "UPDATE" else ""
    run(spark, f"{operation} target AS t{assignment} WHERE {condition}", locations)
    assert run(spark, "SELECT * FROM target", locations) == sorted(kept + changed, key=repr)
