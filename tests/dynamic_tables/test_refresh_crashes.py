"""A refresh killed before or after a stage's or the table's commit loses and repeats nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.operators.stage import STAGE_AFTER_COMMIT, STAGES_FOLDER
from lake_assets.dynamic_tables.runtime.writing import REFRESH_BEFORE_COMMIT
from lake_assets.dynamic_tables.steps.commit import REFRESH_AFTER_COMMIT
from lake_assets.session import LakeSession
from tests.crashes import Crash, crash_at
from tests.dynamic_tables.refresh_helpers import history_of, rows, version


def test_a_crash_after_the_commit_neither_loses_the_record_nor_applies_twice(
    spark: SparkSession, summary: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')")
    crash_at(monkeypatch, REFRESH_AFTER_COMMIT)
    with pytest.raises(Crash):
        dynamic.refresh(spark, summary.catalog, "sales_summary")
    monkeypatch.undo()
    assert [r["refresh_mode"] for r in history_of(summary, "sales_summary")] == ["FULL"]
    outcome = dynamic.refresh(spark, summary.catalog, "sales_summary")
    assert outcome.mode == "NO_DATA"  # the committed refresh is not applied again
    modes = [r["refresh_mode"] for r in history_of(summary, "sales_summary")]
    assert modes == ["NO_DATA", "INCREMENTAL", "FULL"]  # and its record was rebuilt
    assert rows(summary, "SELECT order_cnt FROM sales_summary WHERE category = 'Books'") == [(2,)]
    assert summary.catalog.get(DynamicTableEntry, "sales_summary").row_count == 3


def test_a_crash_before_the_commit_leaves_nothing(
    spark: SparkSession, summary: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = version(spark, summary, "sales_summary")
    summary.sql("DELETE FROM sales_ods WHERE category = 'Books'")
    crash_at(monkeypatch, REFRESH_BEFORE_COMMIT)
    with pytest.raises(Crash):
        dynamic.refresh(spark, summary.catalog, "sales_summary")
    monkeypatch.undo()
    assert version(spark, summary, "sales_summary") == before
    assert dynamic.refresh(spark, summary.catalog, "sales_summary").mode == "INCREMENTAL"
    assert rows(summary, "SELECT COUNT(*) FROM sales_summary") == [(2,)]


def killed_between_commits(
    spark: SparkSession,
    summary: LakeSession,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    point: str,
) -> dynamic.RefreshOutcome:
    """A sale of 30,000 Books, a refresh killed at `point` (a hidden table committed, the table
    not), and the refresh after it."""
    before = version(spark, summary, name)
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Atlas', 'Books', 30000.00, '2026-06-02')")
    crash_at(monkeypatch, point)
    with pytest.raises(Crash):
        dynamic.refresh(spark, summary.catalog, name)
    monkeypatch.undo()
    assert version(spark, summary, name) == before
    return dynamic.refresh(spark, summary.catalog, name)


def test_a_top_n_reads_its_ranked_rows_and_survives_a_crash_between_its_two_commits(
    spark: SparkSession, summary: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranked rows are a stage that commits first, with its own record: killed before the
    table's commit, the next refresh finds them already at the new versions and writes only the
    top."""

    summary.sql(
        "CREATE DYNAMIC TABLE top2 AS SELECT category, SUM(amount) AS total FROM sales_ods "
        "GROUP BY category ORDER BY total DESC LIMIT 2"
    )
    location = summary.catalog.get(DynamicTableEntry, "top2").location
    assert rows(summary, "SELECT * FROM top2 ORDER BY total DESC") == [
        ("Electronics", Decimal("21998.00")), ("Sports", Decimal("2198.00")),
    ]  # fmt: skip
    (stage,) = (Path(location) / STAGES_FOLDER).iterdir()
    ranked = spark.read.format("delta").load(str(stage))
    assert ranked.count() == 3  # every group, the top's and the others
    outcome = killed_between_commits(spark, summary, monkeypatch, "top2", STAGE_AFTER_COMMIT)
    assert (outcome.mode, outcome.rows_inserted, outcome.rows_deleted) == ("INCREMENTAL", 1, 1)
    assert rows(summary, "SELECT * FROM top2 ORDER BY total DESC") == [
        ("Books", Decimal("30999.00")), ("Electronics", Decimal("21998.00")),
    ]  # fmt: skip
    (explained,) = summary.sql("EXPLAIN DYNAMIC TABLE top2")
    assert [row[0] for row in explained.rows][:5] == [
        "dynamic table", "Top 2 by total DESC", "  Scan stage 1", "Stage 1",
        "  Aggregate GROUP BY category",
    ]  # fmt: skip
    summary.sql("DROP DYNAMIC TABLE top2")
    assert not Path(location).exists()


def test_stages_refresh_first_and_survive_a_crash_between_their_commits_and_the_tables(
    spark: SparkSession, summary: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A HAVING over a scalar subquery: its groups and the scalar are stages, each with its own
    record. Killed after the first stage's commit, the next refresh brings the other up and
    applies both stages' changes once."""
    summary.sql(
        "CREATE DYNAMIC TABLE big REFRESH_MODE = INCREMENTAL AS SELECT category, SUM(amount) "
        "AS total FROM sales_ods GROUP BY category "
        "HAVING SUM(amount) > (SELECT AVG(amount) FROM sales_ods)"
    )
    location = summary.catalog.get(DynamicTableEntry, "big").location
    assert rows(summary, "SELECT * FROM big") == [("Electronics", Decimal("21998.00"))]
    assert len(list((Path(location) / STAGES_FOLDER).iterdir())) == 2
    outcome = killed_between_commits(spark, summary, monkeypatch, "big", STAGE_AFTER_COMMIT)
    assert (outcome.mode, outcome.rows_inserted, outcome.rows_deleted) == ("INCREMENTAL", 1, 0)
    assert set(outcome.source_versions) == {"sales_ods"}
    assert rows(summary, "SELECT * FROM big ORDER BY total DESC") == [
        ("Books", Decimal("30999.00")), ("Electronics", Decimal("21998.00")),
    ]  # fmt: skip
    (explained,) = summary.sql("EXPLAIN DYNAMIC TABLE big")
    labels = [row[0] for row in explained.rows]
    assert "      Scan stage 1" in labels
    assert "Stage 2" in labels
    summary.sql("DROP DYNAMIC TABLE big")
    assert not Path(location).exists()
