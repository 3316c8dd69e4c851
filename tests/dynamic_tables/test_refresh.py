"""Dynamic tables on real Spark + Delta: refresh modes and their reasons, NO_DATA, a refresh as one
commit, hidden state columns, AUTO's rule, and change tracking turned off and on again."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.delta import history
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables import choosing
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.describing import HISTORY_COLUMNS
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.operators import aggregate
from lake_assets.dynamic_tables.refreshes import RefreshTrigger
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.dynamic_tables.refresh_helpers import columns, history_of, rows, version


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
