"""A dynamic table's life: CREATE errors, cycles, failed refreshes, SUSPEND, DROP, its key."""

from __future__ import annotations

import sqlite3

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESHES, RefreshTrigger
from lake_assets.session import LakeSession
from tests.dynamic_tables.refresh_helpers import columns, history_of, rows, version


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
