"""Dynamic tables on real Spark + Delta: refresh modes and reasons, NO_DATA, failures that keep the
contents, CREATE errors, cycles, SUSPEND/RESUME, DROP rules, the refresh history, crash safety."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core import failpoints
from lake_assets.core.delta import history
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables import choosing
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.describing import HISTORY_COLUMNS
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.operators import aggregate
from lake_assets.dynamic_tables.operators.stage import STAGE_AFTER_COMMIT, STAGES_FOLDER
from lake_assets.dynamic_tables.refresh import REFRESH_AFTER_COMMIT
from lake_assets.dynamic_tables.refreshes import REFRESHES, RefreshTrigger
from lake_assets.dynamic_tables.runtime.writing import REFRESH_BEFORE_COMMIT
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry

SALES_ODS = """
CREATE TABLE sales_ods (
    id BIGINT, product STRING, category STRING, amount DECIMAL(10,2), dt STRING
);
INSERT INTO sales_ods VALUES
    (1, 'iPhone 15', 'Electronics', 6999.00, '2026-06-01'),
    (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'),
    (3, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'),
    (4, 'Adidas Ultraboost', 'Sports', 1299.00, '2026-06-01'),
    (5, 'Kindle', 'Books', 999.00, '2026-06-01');
"""
SUMMARY = """
CREATE OR REPLACE DYNAMIC TABLE sales_summary REFRESH INTERVAL 1 HOUR vcluster DEFAULT
COMMENT 'Category summary — incremental refresh'
AS SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount,
MIN(dt) AS min_date, MAX(dt) AS max_date FROM sales_ods GROUP BY category
"""


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def columns(lake: LakeSession, sql: str) -> list[str]:
    (result,) = lake.sql(sql)
    return result.columns


def history_of(lake: LakeSession, name: str) -> list[dict]:
    (result,) = lake.sql(f"SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = '{name}'")
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def version(spark: SparkSession, lake: LakeSession, name: str) -> int:
    return history(spark, lake.catalog.get(DynamicTableEntry, name).location, 1)[0].version


class Crash(BaseException):
    """Stands in for SIGKILL in-process: nothing after the failpoint runs."""


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Until `monkeypatch.undo()`, reaching failpoint `point` raises Crash."""

    def reached(name: str) -> None:
        if name == point:
            raise Crash

    monkeypatch.setattr(failpoints, "reached", reached)


@pytest.fixture
def summary(lake: LakeSession) -> LakeSession:
    lake.sql(SALES_ODS)
    lake.sql(SUMMARY)
    return lake


def test_sales_summary_is_created_filled_and_refreshed_incrementally(summary: LakeSession) -> None:
    assert rows(summary, "SELECT * FROM sales_summary ORDER BY category") == [
        ("Books", 1, Decimal("999.00"), Decimal("999.000000"), "2026-06-01", "2026-06-01"),
        ("Electronics", 2, Decimal("21998.00"), Decimal("10999.000000"),
         "2026-06-01", "2026-06-01"),
        ("Sports", 2, Decimal("2198.00"), Decimal("1099.000000"), "2026-06-01", "2026-06-01"),
    ]  # fmt: skip
    assert summary.catalog.get(TableEntry, "sales_ods").change_tracking  # turned on by CREATE
    (refresh,) = summary.sql("REFRESH DYNAMIC TABLE sales_summary")
    assert refresh.message.startswith("REFRESH NO_DATA")
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')")
    summary.sql("DELETE FROM sales_ods WHERE id = 3")
    (refresh,) = summary.sql("REFRESH DYNAMIC TABLE sales_summary")
    assert refresh.message.startswith("REFRESH INCREMENTAL")
    assert rows(summary, "SELECT category, order_cnt, total_amount, max_date FROM sales_summary "
                "ORDER BY category") == [
        ("Books", 2, Decimal("1044.50"), "2026-06-02"),
        ("Electronics", 2, Decimal("21998.00"), "2026-06-01"),
        ("Sports", 1, Decimal("1299.00"), "2026-06-01"),
    ]  # fmt: skip
    newest, no_data, creation = history_of(summary, "sales_summary")
    assert list(newest) == HISTORY_COLUMNS
    assert (newest["state"], newest["refresh_mode"], newest["refresh_trigger"]) == (
        "SUCCEED", "INCREMENTAL", "MANUAL",
    )  # fmt: skip
    assert newest["source_tables"] == "sales_ods@4"
    assert (newest["rows_inserted"], newest["rows_deleted"]) == (2, 2)  # two groups updated
    assert newest["reason"] is None
    assert newest["error_message"] is None
    assert newest["end_time"] >= newest["start_time"]
    assert newest["duration"] >= 0
    assert (no_data["refresh_mode"], no_data["rows_inserted"]) == ("NO_DATA", 0)
    assert (creation["refresh_mode"], creation["refresh_trigger"], creation["reason"]) == (
        "FULL", "CREATION", "initial refresh",
    )  # fmt: skip
    assert creation["source_tables"] == "sales_ods@2"  # after change tracking was turned on


def test_an_extreme_overtaken_by_a_gained_value_is_folded_not_recomputed(
    spark: SparkSession, summary: LakeSession
) -> None:
    """Moving the rows that hold a group's MIN and MAX outwards needs no scan of the source."""
    summary.sql(
        "UPDATE sales_ods SET dt = '2026-06-09' WHERE id = 2;"
        "UPDATE sales_ods SET dt = '2026-05-30' WHERE id = 1;"
        "UPDATE sales_ods SET dt = '2026-06-03' WHERE id = 3"
    )
    (refresh,) = summary.sql("REFRESH DYNAMIC TABLE sales_summary")
    assert refresh.message.startswith("REFRESH INCREMENTAL")
    assert rows(summary, "SELECT category, min_date, max_date FROM sales_summary "
                "ORDER BY category") == [
        ("Books", "2026-06-01", "2026-06-01"),
        ("Electronics", "2026-05-30", "2026-06-09"),
        ("Sports", "2026-06-01", "2026-06-03"),
    ]  # fmt: skip
    # Sports lost its MIN (ids 3 and 4 held it) and gained no lower value: only it is rescanned.
    recomputed = spark.table(aggregate.RECOMPUTE_KEYS).collect()
    assert [tuple(row) for row in recomputed] == [("Sports",)]


def test_hidden_state_columns_are_not_shown(summary: LakeSession) -> None:
    assert columns(summary, "SELECT * FROM sales_summary") == [
        "category", "order_cnt", "total_amount", "avg_amount", "min_date", "max_date",
    ]  # fmt: skip
    assert rows(summary, "SELECT s.order_cnt FROM sales_summary s WHERE s.category = 'Books'") == [
        (1,)
    ]


def test_state_laid_out_for_another_plan_is_recomputed_once_in_the_new_layout(
    spark: SparkSession, summary: LakeSession
) -> None:
    """A table written by an earlier version (here: as a keyed query, one hidden key column)
    refreshes FULL once, in the columns its plan keeps now, and incrementally after that."""
    summary.sql(
        "CREATE DYNAMIC TABLE shares AS SELECT category, "
        "100 * SUM(amount) / COUNT(*) AS per_order FROM sales_ods GROUP BY category"
    )
    entry = summary.catalog.get(DynamicTableEntry, "shares")
    layout = "category, per_order, category AS __lake_key_0"
    spark.sql(f"SELECT {layout} FROM delta.`{entry.location}`").write.format("delta").mode(
        "overwrite"
    ).option("overwriteSchema", "true").save(entry.location)
    summary.catalog.update(
        DynamicTableEntry, "shares", lambda e: replace(e, hidden=("__lake_key_0",))
    )
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')")
    outcome = dynamic.refresh(spark, summary.catalog, "shares")
    assert (outcome.mode, outcome.reason) == (
        "FULL", "its state columns were laid out for another plan: recomputed in this plan's",
    )  # fmt: skip
    hidden = summary.catalog.get(DynamicTableEntry, "shares").hidden
    assert hidden == ("__lake_rows", "__lake_v_1_0", "__lake_nn_1_0", "__lake_v_1_1")
    stored = spark.read.format("delta").load(entry.location).columns
    assert stored == ["category", "per_order", *hidden]
    summary.sql("DELETE FROM sales_ods WHERE id = 1")
    assert dynamic.refresh(spark, summary.catalog, "shares").mode == "INCREMENTAL"
    assert rows(summary, "SELECT * FROM shares ORDER BY category") == rows(
        summary,
        "SELECT category, 100 * SUM(amount) / COUNT(*) FROM sales_ods GROUP BY 1 ORDER BY 1",
    )


def test_no_data_writes_nothing(spark: SparkSession, summary: LakeSession) -> None:
    before = version(spark, summary, "sales_summary")
    outcome = dynamic.refresh(spark, summary.catalog, "sales_summary", RefreshTrigger.SCHEDULED)
    assert (outcome.state, outcome.mode, outcome.version) == ("SUCCEED", "NO_DATA", None)
    assert outcome.source_versions == {"sales_ods": 2}
    assert version(spark, summary, "sales_summary") == before


def test_a_refresh_is_one_commit_carrying_the_versions_it_read(
    spark: SparkSession, summary: LakeSession
) -> None:
    before = version(spark, summary, "sales_summary")
    summary.sql("UPDATE sales_ods SET amount = amount + 1 WHERE category = 'Sports'")
    outcome = dynamic.refresh(spark, summary.catalog, "sales_summary")
    assert outcome.version == before + 1 == version(spark, summary, "sales_summary")
    assert outcome.source_versions == {"sales_ods": 3}
    commit = history(spark, summary.catalog.get(DynamicTableEntry, "sales_summary").location, 1)[0]
    assert '"sales_ods"' in commit.user_metadata
    assert commit.operation == "MERGE"


def test_an_incremental_refresh_writes_one_file_per_core_and_restores_the_session(
    spark: SparkSession, summary: LakeSession
) -> None:
    """Its plans run one wave of tasks; the settings it changes for that are put back after."""
    keys = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions")
    before = {key: spark.conf.get(key) for key in keys}
    summary.sql(
        "UPDATE sales_ods SET amount = amount + 1;"
        "INSERT INTO sales_ods SELECT id, 'Pen', CONCAT('Office ', id), 2.50, '2026-06-02' "
        "FROM range(10, 30)"
    )
    outcome = dynamic.refresh(spark, summary.catalog, "sales_summary")
    assert outcome.mode == "INCREMENTAL"
    commit = history(spark, summary.catalog.get(DynamicTableEntry, "sales_summary").location, 1)[0]
    metrics = commit.operation_metrics
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == ("3", "20")
    cores = int(spark.conf.get("spark.default.parallelism"))
    partitions = min(cores, int(before["spark.sql.shuffle.partitions"]))
    assert int(metrics["numTargetFilesAdded"]) <= partitions
    assert {key: spark.conf.get(key) for key in keys} == before


def test_unsupported_shapes_refresh_full_with_the_reason(summary: LakeSession) -> None:
    summary.sql(
        "CREATE DYNAMIC TABLE ranked AS SELECT id, "
        "ROW_NUMBER() OVER (ORDER BY amount DESC) AS rank FROM sales_ods;"
        "CREATE DYNAMIC TABLE ranked_in_category AS SELECT id, "
        "ROW_NUMBER() OVER (PARTITION BY category ORDER BY amount DESC) AS rank FROM sales_ods"
    )
    describe = dict(rows(summary, "DESC DYNAMIC TABLE ranked"))
    assert describe["refresh_mode"] == "FULL"
    assert describe["refresh_mode_reason"] == "window functions are refreshed in full"
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')")
    summary.sql("REFRESH DYNAMIC TABLE ranked; REFRESH DYNAMIC TABLE ranked_in_category")
    newest = history_of(summary, "ranked")[0]
    assert (newest["refresh_mode"], newest["reason"]) == (
        "FULL", "window functions are refreshed in full",
    )  # fmt: skip
    # Recomputed, but only what differs from the table is written: the new row, ranked last.
    assert (newest["rows_inserted"], newest["rows_deleted"]) == (1, 0)
    assert rows(summary, "SELECT rank FROM ranked WHERE id = 6") == [(6,)]
    # With a PARTITION BY, only the new row's category is recomputed, and only what differs
    # from the table is written: one row gained, none lost.
    keyed = history_of(summary, "ranked_in_category")[0]
    assert (keyed["refresh_mode"], keyed["rows_inserted"], keyed["rows_deleted"]) == (
        "INCREMENTAL", 1, 0,
    )  # fmt: skip
    assert rows(summary, "SELECT rank FROM ranked_in_category WHERE id = 6") == [(2,)]


def test_any_query_spark_runs_is_a_dynamic_table(summary: LakeSession) -> None:
    """An unnamed result keeps Spark's name (column mapping takes it), a WITH query is created,
    and an ORDER BY that only sorts is dropped, as DESC says."""
    summary.sql(
        "CREATE DYNAMIC TABLE unnamed AS SELECT category, COUNT(*), SUM(amount) FROM sales_ods "
        "GROUP BY category;"
        "CREATE DYNAMIC TABLE spaced AS SELECT id, amount * 2 AS `twice the amount` "
        "FROM sales_ods;"
        "CREATE DYNAMIC TABLE with_cte AS WITH revenue AS (SELECT category, SUM(amount) AS total "
        "FROM sales_ods GROUP BY category) SELECT category, total FROM revenue "
        "WHERE total = (SELECT MAX(total) FROM revenue);"
        "CREATE DYNAMIC TABLE sorted AS SELECT id, amount FROM sales_ods ORDER BY amount DESC"
    )
    assert columns(summary, "SELECT * FROM unnamed") == ["category", "count(1)", "sum(amount)"]
    assert columns(summary, "SELECT * FROM spaced") == ["id", "twice the amount"]
    described = dict(rows(summary, "DESC DYNAMIC TABLE sorted"))
    assert described["notes"] == (
        "ORDER BY is ignored: a table's rows have no order; sort when you query it"
    )
    assert described["refresh_mode"] == "INCREMENTAL"
    assert dict(rows(summary, "DESC DYNAMIC TABLE unnamed"))["notes"] is None

    summary.sql(
        "INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02');"
        "REFRESH DYNAMIC TABLE unnamed; REFRESH DYNAMIC TABLE spaced; "
        "REFRESH DYNAMIC TABLE with_cte; REFRESH DYNAMIC TABLE sorted"
    )
    for name in ("unnamed", "spaced", "sorted"):
        assert history_of(summary, name)[0]["refresh_mode"] == "INCREMENTAL"
    for name, query in (
        ("unnamed", "SELECT category, COUNT(*), SUM(amount) FROM sales_ods GROUP BY category"),
        ("spaced", "SELECT id, amount * 2 FROM sales_ods"),
        ("with_cte", "SELECT category, SUM(amount) FROM sales_ods GROUP BY category "
         "ORDER BY 2 DESC LIMIT 1"),
        ("sorted", "SELECT id, amount FROM sales_ods"),
    ):  # fmt: skip
        assert sorted(rows(summary, f"SELECT * FROM {name}")) == sorted(rows(summary, query))


def test_subqueries_and_derived_tables_refresh_incrementally(summary: LakeSession) -> None:
    """The sources' columns say which table an unqualified name is (the subquery's own first);
    EXISTS, NOT EXISTS over the same table and IN then run as semi and anti joins, a derived
    table that only projects and filters is merged into the query that reads it, and CTEs are
    the derived tables they stand for."""
    promoted = (
        "SELECT category, COUNT(*) AS n, SUM(amount) AS total FROM sales_ods "
        "WHERE EXISTS (SELECT 1 FROM promos WHERE promo_category = category AND active) "
        "AND NOT EXISTS (SELECT 1 FROM promos WHERE promo_category = category AND active IS NULL) "
        "GROUP BY category"
    )
    listed = (
        "SELECT id, product FROM sales_ods WHERE category IN (SELECT promo_category FROM promos)"
    )
    derived = (
        "SELECT category, SUM(doubled) AS total, MAX(d) AS latest FROM (SELECT category, "
        "amount * 2 AS doubled, dt AS d FROM sales_ods WHERE amount > 100) AS s "
        "WHERE doubled < 20000 GROUP BY category"
    )
    counted = (
        "WITH big AS (SELECT id, category, amount FROM sales_ods WHERE amount > 100), "
        "per AS (SELECT category, COUNT(*) AS n FROM big GROUP BY category) "
        "SELECT n, COUNT(*) AS categories FROM per GROUP BY n"
    )
    joined = (
        "WITH big AS (SELECT s.id, s.category FROM sales_ods s WHERE s.amount > 100) "
        "SELECT big.id, p.active FROM big JOIN promos p ON big.category = p.promo_category"
    )
    summary.sql(
        "CREATE TABLE promos (promo_category STRING, active BOOLEAN);"
        "INSERT INTO promos VALUES ('Books', TRUE), ('Sports', TRUE), ('Sports', NULL);"
        f"CREATE DYNAMIC TABLE promoted REFRESH_MODE = INCREMENTAL AS {promoted};"
        f"CREATE DYNAMIC TABLE listed REFRESH_MODE = INCREMENTAL AS {listed};"
        f"CREATE DYNAMIC TABLE derived REFRESH_MODE = INCREMENTAL AS {derived};"
        f"CREATE DYNAMIC TABLE counted REFRESH_MODE = INCREMENTAL AS {counted};"
        f"CREATE DYNAMIC TABLE joined REFRESH_MODE = INCREMENTAL AS {joined}"
    )
    assert columns(summary, "SELECT * FROM derived") == ["category", "total", "latest"]
    summary.sql(
        "INSERT INTO promos VALUES ('Electronics', TRUE);"
        "DELETE FROM promos WHERE promo_category = 'Sports' AND active IS NULL;"
        "INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02');"
        "REFRESH DYNAMIC TABLE promoted; REFRESH DYNAMIC TABLE listed;"
        "REFRESH DYNAMIC TABLE derived; REFRESH DYNAMIC TABLE counted; REFRESH DYNAMIC TABLE joined"
    )
    queries = {
        "promoted": promoted, "listed": listed, "derived": derived, "counted": counted,
        "joined": joined,
    }  # fmt: skip
    for name, query in queries.items():
        assert history_of(summary, name)[0]["refresh_mode"] == "INCREMENTAL"
        assert sorted(rows(summary, f"SELECT * FROM {name}")) == sorted(rows(summary, query))
    assert sorted(rows(summary, "SELECT category, n FROM promoted")) == [
        ("Books", 2), ("Electronics", 2), ("Sports", 2),
    ]  # fmt: skip


def refreshed_through(lake: LakeSession, name: str, query: str, steps: list[str]) -> list[list]:
    """The table's rows after each step and an incremental refresh, each equal to its query's."""
    held = []
    for step in steps:
        lake.sql(f"{step}; REFRESH DYNAMIC TABLE {name}")
        assert history_of(lake, name)[0]["refresh_mode"] == "INCREMENTAL"
        held.append(sorted(rows(lake, f"SELECT * FROM {name}"), key=str))
        assert held[-1] == sorted(rows(lake, query), key=str), step
    return held


def test_not_in_follows_the_nulls_of_its_subquery(summary: LakeSession) -> None:
    """One NULL among NOT IN's rows keeps no row at all; a row whose category is NULL is kept
    only while the subquery has no rows."""
    allowed = (
        "SELECT id, category FROM sales_ods WHERE category NOT IN (SELECT b.category FROM banned b)"
    )
    summary.sql(
        "CREATE TABLE banned (category STRING); INSERT INTO banned VALUES ('Sports');"
        f"CREATE DYNAMIC TABLE allowed REFRESH_MODE = INCREMENTAL AS {allowed}"
    )
    steps = [
        "INSERT INTO banned VALUES (NULL)",
        "INSERT INTO sales_ods VALUES (6, 'Dune', NULL, 45.50, '2026-06-02')",
        "DELETE FROM banned WHERE category IS NULL",
        "DELETE FROM banned",
        "INSERT INTO banned VALUES ('Books')",
    ]
    held = refreshed_through(summary, "allowed", allowed, steps)
    assert [len(rows_held) for rows_held in held] == [0, 0, 3, 6, 4]


def test_an_uncorrelated_scalar_subquery_touches_the_rows_it_decides_otherwise(
    summary: LakeSession,
) -> None:
    """When the average moves, rows that did not change cross it: their keys are recomputed."""
    above = (
        "SELECT category, COUNT(*) AS n, SUM(amount) AS total FROM sales_ods s "
        "WHERE amount > (SELECT AVG(a.amount) FROM sales_ods a) "
        "AND NOT EXISTS (SELECT * FROM banned b WHERE b.category = s.category) GROUP BY category"
    )
    summary.sql(
        "CREATE TABLE banned (category STRING);"
        f"CREATE DYNAMIC TABLE above REFRESH_MODE = INCREMENTAL AS {above}"
    )
    steps = [
        "INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')",
        "UPDATE sales_ods SET amount = 100 WHERE id = 2",
        "DELETE FROM sales_ods WHERE id = 1",
        "INSERT INTO banned VALUES ('Sports')",
        "INSERT INTO sales_ods VALUES (7, 'Lego', 'Toys', 100000, '2026-06-02')",
    ]
    held = refreshed_through(summary, "above", above, steps)
    assert [[(category, n) for category, n, _ in rows_held] for rows_held in held] == [
        [("Electronics", 2)],
        [("Electronics", 1)],
        [("Books", 1), ("Sports", 2)],
        [("Books", 1)],
        [("Toys", 1)],
    ]


def test_refresh_mode_full_incremental_and_auto_by_the_size_of_the_change(
    summary: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choosing, "AUTO_MIN_ROWS", 5)  # the rule as on large sources
    with pytest.raises(LakeError, match=r"cannot refresh INCREMENTAL: window functions are"):
        summary.sql(
            "CREATE DYNAMIC TABLE ranked REFRESH_MODE = INCREMENTAL AS SELECT id, "
            "RANK() OVER (ORDER BY amount) AS r FROM sales_ods"
        )
    summary.sql(
        "CREATE DYNAMIC TABLE always REFRESH_MODE = FULL AS SELECT id, amount FROM sales_ods;"
        "CREATE DYNAMIC TABLE never REFRESH_MODE = INCREMENTAL AS SELECT id, amount FROM sales_ods;"
        "CREATE DYNAMIC TABLE chosen AS SELECT id, amount FROM sales_ods"
    )
    described = dict(rows(summary, "DESC DYNAMIC TABLE always"))
    assert (described["declared_refresh_mode"], described["refresh_mode"]) == ("FULL", "FULL")
    assert described["refresh_mode_reason"] == "REFRESH_MODE = FULL"
    assert dict(rows(summary, "DESC DYNAMIC TABLE chosen"))["declared_refresh_mode"] == "AUTO"
    assert rows(summary, "EXPLAIN DYNAMIC TABLE always") == [
        ("dynamic table", "FULL: REFRESH_MODE = FULL"),
        ("Project id, amount", "recomputed"),
        ("  Scan sales_ods", "recomputed"),
    ]

    # One row of five: AUTO applies it. Five new rows on six: AUTO recomputes, and says why.
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')")
    for name in ("always", "never", "chosen"):
        summary.sql(f"REFRESH DYNAMIC TABLE {name}")
    modes = {name: history_of(summary, name)[0]["refresh_mode"] for name in ("always", "never")}
    assert modes == {"always": "FULL", "never": "INCREMENTAL"}
    assert history_of(summary, "chosen")[0]["refresh_mode"] == "INCREMENTAL"
    summary.sql(
        "INSERT INTO sales_ods SELECT id + 10, product, category, amount, dt FROM sales_ods "
        "WHERE id <= 5; REFRESH DYNAMIC TABLE chosen; REFRESH DYNAMIC TABLE never;"
        "REFRESH DYNAMIC TABLE always"
    )
    chosen = history_of(summary, "chosen")[0]
    assert (chosen["refresh_mode"], chosen["reason"]) == (
        "FULL",
        "AUTO: 5 rows changed of 11 in the sources (45%), at least 20%: recomputing costs less "
        "than applying the changes",
    )
    assert history_of(summary, "never")[0]["refresh_mode"] == "INCREMENTAL"
    for name in ("always", "never", "chosen"):
        assert sorted(rows(summary, f"SELECT * FROM {name}")) == sorted(
            rows(summary, "SELECT id, amount FROM sales_ods")
        )


def test_change_tracking_turned_off_is_turned_on_again_and_refreshes_full(
    summary: LakeSession,
) -> None:
    """Stages too: the feed they would read is gone, so they are rebuilt whole."""
    summary.sql(
        "CREATE DYNAMIC TABLE big AS SELECT category FROM sales_ods GROUP BY category "
        "HAVING SUM(amount) > (SELECT AVG(amount) FROM sales_ods)"
    )
    summary.sql("ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'false')")
    summary.sql("INSERT INTO sales_ods VALUES (6, 'Atlas', 'Books', 30000.00, '2026-06-02')")
    describe = dict(rows(summary, "DESC DYNAMIC TABLE sales_summary"))
    assert describe["refresh_mode"] == "FULL"
    tracking = "change tracking of sales_ods was off (the refresh turns it on)"
    assert describe["refresh_mode_reason"] == tracking
    summary.sql("REFRESH DYNAMIC TABLE sales_summary")
    newest = history_of(summary, "sales_summary")[0]
    assert newest["refresh_mode"] == "FULL"
    assert newest["reason"] == tracking
    assert summary.catalog.get(TableEntry, "sales_ods").change_tracking
    summary.sql("DELETE FROM sales_ods WHERE id = 5")
    summary.sql("REFRESH DYNAMIC TABLE sales_summary")
    assert history_of(summary, "sales_summary")[0]["refresh_mode"] == "INCREMENTAL"
    assert rows(summary, "SELECT COUNT(*) FROM sales_summary") == [(3,)]  # Atlas stays
    summary.sql("REFRESH DYNAMIC TABLE big")
    assert history_of(summary, "big")[0]["state"] == "SUCCEED"
    assert rows(summary, "SELECT * FROM big ORDER BY category") == [("Books",), ("Electronics",)]


def test_a_failed_refresh_keeps_the_contents_and_records_the_error(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql("CREATE TABLE raw (id BIGINT, qty STRING)")
    lake.sql("INSERT INTO raw VALUES (1, '3'), (2, '4')")
    lake.sql("CREATE DYNAMIC TABLE parsed AS SELECT id, CAST(qty AS INT) AS qty FROM raw")
    before = version(spark, lake, "parsed")
    lake.sql("INSERT INTO raw VALUES (3, 'seven')")
    with pytest.raises(LakeError, match="CAST_INVALID_INPUT"):
        lake.sql("REFRESH DYNAMIC TABLE parsed")
    assert version(spark, lake, "parsed") == before
    assert sorted(rows(lake, "SELECT * FROM parsed")) == [(1, 3), (2, 4)]
    failed = history_of(lake, "parsed")[0]
    assert (failed["state"], failed["refresh_mode"]) == ("FAILED", None)
    assert "'seven'" in failed["error_message"]
    lake.sql("UPDATE raw SET qty = '7' WHERE id = 3")
    lake.sql("REFRESH DYNAMIC TABLE parsed")
    assert history_of(lake, "parsed")[0]["refresh_mode"] == "INCREMENTAL"
    assert sorted(rows(lake, "SELECT * FROM parsed")) == [(1, 3), (2, 4), (3, 7)]


def test_a_create_whose_first_refresh_fails_leaves_nothing_behind(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE raw (id BIGINT, qty STRING); INSERT INTO raw VALUES (1, '3')")
    lake.sql("CREATE DYNAMIC TABLE parsed AS SELECT id, CAST(qty AS INT) AS qty FROM raw")
    lake.sql("INSERT INTO raw VALUES (2, 'seven')")
    kept = lake.catalog.get(DynamicTableEntry, "parsed")
    query = "SELECT id, CAST(qty AS INT) + 1 AS qty FROM raw"
    with pytest.raises(LakeError, match=r"dynamic table parsed was not replaced: .*CAST_INVALID"):
        lake.sql(f"CREATE OR REPLACE DYNAMIC TABLE parsed AS {query}")
    assert lake.catalog.get(DynamicTableEntry, "parsed").location == kept.location
    assert rows(lake, "SELECT * FROM parsed") == [(1, 3)]
    with pytest.raises(LakeError, match=r"dynamic table plus was not created: .*CAST_INVALID"):
        lake.sql(f"CREATE DYNAMIC TABLE plus AS {query}")
    assert lake.catalog.find(DynamicTableEntry, "plus") is None
    assert REFRESHES.newest_first(lake.catalog, "plus") == []
    assert sorted(p.name.split("-")[0] for p in lake.warehouse.iterdir()) == ["parsed", "raw"]


def test_create_refuses_unknown_tables_columns_and_hidden_names(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    with pytest.raises(LakeError, match="table nope does not exist"):
        lake.sql("CREATE DYNAMIC TABLE d AS SELECT * FROM nope")
    with pytest.raises(LakeError, match=r"UNRESOLVED_COLUMN.*`nme`"):
        lake.sql("CREATE DYNAMIC TABLE d AS SELECT nme FROM t")
    with pytest.raises(LakeError, match=r"'__lake_n' .* starts with __lake_"):
        lake.sql("CREATE DYNAMIC TABLE d (name, __lake_n) AS SELECT name, id FROM t")
    with pytest.raises(LakeError, match="lists 1 columns but its query returns 2"):
        lake.sql("CREATE DYNAMIC TABLE d (only_one) AS SELECT id, name FROM t")
    assert rows(lake, "SHOW DYNAMIC TABLES") == []
    lake.sql("CREATE DYNAMIC TABLE d (ident COMMENT 'the id', label) AS SELECT id, name FROM t")
    assert columns(lake, "SELECT * FROM d") == ["ident", "label"]
    assert lake.catalog.get(DynamicTableEntry, "d").columns[0].comment == "the id"
    with pytest.raises(LakeError, match="dynamic table d already exists"):
        lake.sql("CREATE DYNAMIC TABLE d AS SELECT id FROM t")
    (skipped,) = lake.sql("CREATE DYNAMIC TABLE IF NOT EXISTS d AS SELECT id FROM t")
    assert skipped.message == "dynamic table d already exists; nothing to do"
    with pytest.raises(LakeError, match="table t already exists"):
        lake.sql("CREATE OR REPLACE DYNAMIC TABLE t AS SELECT id FROM d")


def test_cycles_between_dynamic_tables_are_refused(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id BIGINT)")
    lake.sql("CREATE DYNAMIC TABLE a AS SELECT id FROM t")
    lake.sql("CREATE DYNAMIC TABLE b AS SELECT id FROM a")
    with pytest.raises(LakeError, match="dynamic table a would read itself: a → b → a"):
        lake.sql("CREATE OR REPLACE DYNAMIC TABLE a AS SELECT id FROM b")
    assert lake.catalog.get(DynamicTableEntry, "a").sources == ("t",)


def test_replacing_an_upstream_dynamic_table_refreshes_readers_full(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id BIGINT)")
    lake.sql("INSERT INTO t VALUES (1), (2)")
    lake.sql("CREATE DYNAMIC TABLE a AS SELECT id FROM t")
    lake.sql("CREATE DYNAMIC TABLE b AS SELECT id * 10 AS big FROM a")
    lake.sql("CREATE OR REPLACE DYNAMIC TABLE a AS SELECT id FROM t WHERE id > 1")
    lake.sql("REFRESH DYNAMIC TABLE b")
    newest = history_of(lake, "b")[0]
    assert (newest["refresh_mode"], newest["reason"]) == (
        "FULL", "a was replaced since the last refresh",
    )  # fmt: skip
    assert rows(lake, "SELECT * FROM b") == [(20,)]


def test_suspend_skips_automatic_refreshes_and_resume_restores_them(
    spark: SparkSession, summary: LakeSession
) -> None:
    (message,) = summary.sql("ALTER DYNAMIC TABLE sales_summary SUSPEND")
    assert message.message == "dynamic table sales_summary is SUSPENDED"
    assert rows(summary, "SHOW DYNAMIC TABLES")[0][1] == "SUSPENDED"
    summary.sql("DELETE FROM sales_ods WHERE id = 5")
    outcome = dynamic.refresh(spark, summary.catalog, "sales_summary", RefreshTrigger.UPSTREAM)
    assert (outcome.state, outcome.reason) == ("SKIPPED", "the dynamic table is suspended")
    assert history_of(summary, "sales_summary")[0]["state"] == "SKIPPED"
    assert rows(summary, "SELECT COUNT(*) FROM sales_summary") == [(3,)]
    summary.sql("ALTER DYNAMIC TABLE sales_summary RESUME")
    outcome = dynamic.refresh(spark, summary.catalog, "sales_summary", RefreshTrigger.SCHEDULED)
    assert (outcome.state, outcome.mode) == ("SUCCEED", "INCREMENTAL")
    assert rows(summary, "SELECT COUNT(*) FROM sales_summary") == [(2,)]


def test_drop_rules(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id BIGINT)")
    lake.sql("CREATE DYNAMIC TABLE a AS SELECT id FROM t")
    lake.sql("CREATE DYNAMIC TABLE b AS SELECT id FROM a")
    with pytest.raises(LakeError, match="table t is used by dynamic table a"):
        lake.sql("DROP TABLE t")
    with pytest.raises(LakeError, match="dynamic table a is used by dynamic table b"):
        lake.sql("DROP DYNAMIC TABLE a")
    with pytest.raises(LakeError, match="a is a dynamic table: only its refreshes write it"):
        lake.sql("INSERT INTO a VALUES (1)")
    with pytest.raises(LakeError, match="drop it with DROP DYNAMIC TABLE a"):
        lake.sql("DROP TABLE a")
    lake.sql("DROP DYNAMIC TABLE b; DROP DYNAMIC TABLE a; DROP DYNAMIC TABLE IF EXISTS a")
    assert rows(lake, "SHOW DYNAMIC TABLES") == []
    assert REFRESHES.newest_first(lake.catalog) == []
    lake.sql("DROP TABLE t")


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


def test_refresh_history_index_is_plain_sqlite(summary: LakeSession) -> None:
    with sqlite3.connect(summary.settings.catalog_path) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM refresh_history WHERE name = 'sales_summary'"
        ).fetchone()
    assert count == 1


def test_a_dynamic_table_key_is_declared_shown_and_kept_by_or_replace(summary: LakeSession) -> None:
    (declared,) = summary.sql("ALTER DYNAMIC TABLE sales_summary SET PRIMARY KEY (CATEGORY)")
    assert declared.message == "dynamic table sales_summary has primary key (category)"
    assert dict(rows(summary, "DESC DYNAMIC TABLE sales_summary"))["primary_key"] == "category"
    assert [(row[0], row[3]) for row in rows(summary, "DESC TABLE sales_summary")] == [
        ("category", 1), ("order_cnt", None), ("total_amount", None), ("avg_amount", None),
        ("min_date", None), ("max_date", None),
    ]  # fmt: skip
    summary.sql(
        "CREATE OR REPLACE DYNAMIC TABLE sales_summary AS "
        "SELECT category, COUNT(*) AS n FROM sales_ods GROUP BY category"
    )
    assert summary.catalog.get(DynamicTableEntry, "sales_summary").primary_key == ("category",)
    with pytest.raises(LakeError) as raised:
        summary.sql(
            "CREATE OR REPLACE DYNAMIC TABLE sales_summary AS "
            "SELECT dt, COUNT(*) AS n FROM sales_ods GROUP BY dt"
        )
    assert raised.value.what == (
        "dynamic table sales_summary keeps its primary key (category) when replaced, but primary "
        "key column category is not a column of dynamic table sales_summary"
    )
    assert raised.value.fix == (
        "return the key's columns from the new query, or first ALTER DYNAMIC TABLE sales_summary "
        "DROP PRIMARY KEY"
    )
    kept = summary.catalog.get(DynamicTableEntry, "sales_summary")
    assert (kept.columns[0].name, kept.primary_key) == ("category", ("category",))
    (dropped,) = summary.sql("ALTER DYNAMIC TABLE sales_summary DROP PRIMARY KEY")
    assert dropped.message == "dynamic table sales_summary has no primary key"
    assert dict(rows(summary, "DESC DYNAMIC TABLE sales_summary"))["primary_key"] is None


def test_a_dynamic_table_key_refuses_complex_and_unknown_columns(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    lake.sql("CREATE DYNAMIC TABLE d AS SELECT id, array(name, name) AS names FROM t")
    with pytest.raises(LakeError) as raised:
        lake.sql("ALTER DYNAMIC TABLE d SET PRIMARY KEY (id, names)")
    assert raised.value.what == (
        "primary key column names of dynamic table d is ARRAY<STRING>: a key column must be of "
        "an atomic type"
    )
    with pytest.raises(LakeError) as raised:
        lake.sql("ALTER DYNAMIC TABLE d SET PRIMARY KEY (name)")
    assert str(raised.value) == (
        "primary key column name is not a column of dynamic table d — choose among its columns: "
        "id, names"
    )
    with pytest.raises(LakeError) as raised:
        lake.sql("ALTER TABLE d SET PRIMARY KEY (id)")
    assert str(raised.value) == "d is a dynamic table — alter its key with ALTER DYNAMIC TABLE d"
    with pytest.raises(LakeError) as raised:
        lake.sql("ALTER DYNAMIC TABLE nowhere SET PRIMARY KEY (id)")
    assert raised.value.what == "dynamic table nowhere does not exist"
    assert lake.catalog.get(DynamicTableEntry, "d").primary_key == ()
