"""Pruning ranges on real Spark + Delta: they hold every changed row, cut at the gaps between
changes, and let Delta skip a projection's files when the table is laid out along the column."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lake_assets.core.delta import history
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refresh import refresh
from lake_assets.dynamic_tables.runtime import pruning
from lake_assets.dynamic_tables.runtime.sources import table_at
from lake_assets.session import LakeSession


def test_ranges_hold_every_row_and_cut_at_the_gaps(spark: SparkSession) -> None:
    changed = spark.createDataFrame(
        [(i, "x") for i in [*range(100, 110), *range(5000, 5003)]] + [(None, "y")],
        "id BIGINT, label STRING",
    )
    where = pruning.ranges(changed, changed.schema.fields)
    assert where is not None
    assert where.column == "id"
    assert where.bounds == ((100, 109), (5000, 5002))
    assert where.nulls
    assert changed.where(where.sql()).count() == changed.count()


@pytest.mark.parametrize(
    ("values", "kind", "bounds"),
    [
        ([Decimal("1.50"), Decimal("-2.25")], "DECIMAL(6,2)", (Decimal("-2.25"), Decimal("1.50"))),
        ([date(2026, 6, 1), date(2026, 6, 3)], "DATE", (date(2026, 6, 1), date(2026, 6, 3))),
    ],
)
def test_ranges_of_decimals_and_dates(
    spark: SparkSession, values: list[object], kind: str, bounds: tuple[object, object]
) -> None:
    changed = spark.createDataFrame([(v,) for v in values], f"v {kind}")
    where = pruning.ranges(changed, changed.schema.fields)
    assert where is not None
    assert not where.nulls
    assert (where.bounds[0][0], where.bounds[-1][1]) == bounds
    assert changed.where(where.sql()).count() == len(values)


def test_no_prunable_column_and_only_nulls(spark: SparkSession) -> None:
    text = spark.createDataFrame([("a",)], "s STRING")
    assert pruning.ranges(text, text.schema.fields) is None
    nulls = spark.createDataFrame([(None,)], "n INT")
    where = pruning.ranges(nulls, nulls.schema.fields)
    assert where is not None
    assert where.sql() == "(`n` IS NULL)"


def test_a_small_delete_reads_few_files_of_a_projection(
    spark: SparkSession, lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pruning, "ROWS_PER_FILE", 100)
    lake.sql(
        "CREATE TABLE events (id BIGINT, kind STRING);"
        "INSERT INTO events SELECT id, concat('k', id % 3) FROM range(1000);"
        "CREATE DYNAMIC TABLE picked AS SELECT id, kind FROM events WHERE kind <> 'k0'"
    )
    entry = lake.catalog.get(DynamicTableEntry, "picked")
    before = table_at(spark, entry.location, history(spark, entry.location, 1)[0].version)
    assert len(before.inputFiles()) >= 6
    lake.sql("DELETE FROM events WHERE id BETWEEN 410 AND 420")
    lost = before.where(F.col("id").between(410, 420))
    where = pruning.ranges(lost, before.schema.fields)
    assert where is not None
    assert len(before.where(where.sql()).inputFiles()) <= 2
    outcome = refresh(spark, lake.catalog, "picked")
    assert (outcome.mode, outcome.rows_deleted) == ("INCREMENTAL", lost.count())
    (mine,) = lake.sql("SELECT id, kind FROM picked ORDER BY id")
    (truth,) = lake.sql("SELECT id, kind FROM events WHERE kind <> 'k0' ORDER BY id")
    assert mine.rows == truth.rows
