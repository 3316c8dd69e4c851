"""Table streams through the SQL surface, on real Spark and Delta: an APPEND_ONLY stream, a
STANDARD one consumed by INSERT … SELECT and by the consumer MERGE, the net change rules, initial
rows, and the versions that old images carry."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lake_assets.session import LakeSession
from tests.streams.stream_helpers import (
    CONSUMER_MERGE,
    TABLE,
    changes,
    desc,
    history,
    latest,
    rows,
    tracked,
)


def test_an_append_only_stream_keeps_showing_the_inserted_rows(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE test_table (id INT, name VARCHAR, age INT)")
    lake.sql("ALTER table test_table set PROPERTIES ('change_tracking' = 'true')")
    lake.sql(
        "CREATE table stream test_stream ON TABLE test_table "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')"
    )
    lake.sql(
        "INSERT INTO test_table VALUES (1, 'Alice', 20), (2, 'Bob', 25), (3, 'Charlie', 30), "
        "(4, 'David', 35), (5, 'Eve', 40)"
    )
    inserted = latest(lake, "test_table")
    expected = [
        ("INSERT", inserted, 1, "Alice", 20),
        ("INSERT", inserted, 2, "Bob", 25),
        ("INSERT", inserted, 3, "Charlie", 30),
        ("INSERT", inserted, 4, "David", 35),
        ("INSERT", inserted, 5, "Eve", 40),
    ]
    assert history(lake, "test_table")[inserted][1] == "WRITE"
    assert changes(lake, "test_stream") == expected
    lake.sql("UPDATE test_table SET age = age + 5 WHERE id = 1 OR id = 3")
    assert changes(lake, "test_stream") == expected
    lake.sql("DELETE FROM test_table WHERE id = 2 OR id = 4")
    assert changes(lake, "test_stream") == expected
    lake.sql("DELETE FROM test_table")
    assert changes(lake, "test_stream") == expected
    assert rows(lake, "SELECT * FROM test_table") == []


def test_a_standard_stream_consumed_by_insert_select_then_the_consumer_merge(
    lake: LakeSession,
) -> None:
    lake.sql("CREATE TABLE test_table_offset (id INT, name VARCHAR, age INT)")
    lake.sql("ALTER TABLE test_table_offset set PROPERTIES ('change_tracking' = 'true')")
    lake.sql(
        "CREATE table stream test_table_offset_stream ON TABLE test_table_offset "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')"
    )
    lake.sql(
        "INSERT INTO test_table_offset VALUES (1, 'Alice', 20), (2, 'Bob', 25), "
        "(3, 'Charlie', 30), (4, 'David', 35), (5, 'Eve', 40)"
    )
    inserted = latest(lake, "test_table_offset")
    lake.sql("CREATE TABLE test_table_offset_consume (id INT, name VARCHAR, age INT)")
    lake.sql(
        "INSERT INTO test_table_offset_consume SELECT id,name,age FROM test_table_offset_stream"
    )
    assert changes(lake, "test_table_offset_stream") == []
    assert desc(lake, "test_table_offset_stream")["offset_version"] == inserted

    lake.sql("UPDATE test_table_offset SET age = age + 5 WHERE id = 1 OR id = 3")
    updated = latest(lake, "test_table_offset")
    assert changes(lake, "test_table_offset_stream") == [
        ("UPDATE_AFTER", updated, 1, "Alice", 25),
        ("UPDATE_AFTER", updated, 3, "Charlie", 35),
        ("UPDATE_BEFORE", inserted, 1, "Alice", 20),
        ("UPDATE_BEFORE", inserted, 3, "Charlie", 30),
    ]
    # Each row's commit time is that of the commit that wrote its image, as DESC HISTORY has it.
    commits = history(lake, "test_table_offset")
    (result,) = lake.sql("SELECT * FROM test_table_offset_stream")
    assert {(row[1], row[2]) for row in result.rows} == {
        (inserted, commits[inserted][0]),
        (updated, commits[updated][0]),
    }
    merge = CONSUMER_MERGE.format(
        target="test_table_offset_consume", stream="test_table_offset_stream"
    )
    lake.sql(merge)
    assert rows(lake, "SELECT * FROM test_table_offset_consume") == [
        (1, "Alice", 25), (2, "Bob", 25), (3, "Charlie", 35), (4, "David", 35), (5, "Eve", 40),
    ]  # fmt: skip
    assert changes(lake, "test_table_offset_stream") == []

    lake.sql("DELETE FROM test_table_offset WHERE id = 2 OR id = 4")
    assert changes(lake, "test_table_offset_stream") == [
        ("DELETE", inserted, 2, "Bob", 25),
        ("DELETE", inserted, 4, "David", 35),
    ]
    lake.sql(merge)
    assert rows(lake, "SELECT * FROM test_table_offset_consume") == [
        (1, "Alice", 25), (3, "Charlie", 35), (5, "Eve", 40),
    ]  # fmt: skip
    assert changes(lake, "test_table_offset_stream") == []
    assert desc(lake, "test_table_offset_stream")["offset_version"] == latest(
        lake, "test_table_offset"
    )


def test_append_only_commit_times_are_those_of_desc_history(lake: LakeSession) -> None:
    lake.sql(
        f"{TABLE}; CREATE TABLE STREAM s ON TABLE t "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY'); "
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)"
    )
    version = latest(lake, "t")
    (result,) = lake.sql("SELECT * FROM s")
    assert {(row[1], row[2]) for row in result.rows} == {(version, history(lake, "t")[version][0])}


def test_standard_is_the_net_change_per_row(lake: LakeSession) -> None:
    base = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    lake.sql("INSERT INTO t VALUES (10, 'x', 10), (11, 'y', 11)")
    lake.sql("UPDATE t SET age = age + 100 WHERE id IN (1, 2, 11)")
    lake.sql("UPDATE t SET age = age + 100 WHERE id IN (1, 11)")
    last_update = latest(lake, "t")
    lake.sql("DELETE FROM t WHERE id IN (2, 4, 10)")
    assert changes(lake, "s") == [
        ("DELETE", base, 2, "b", 2),  # updated then deleted: the values at the offset
        ("DELETE", base, 4, "d", 4),
        ("INSERT", last_update, 11, "y", 211),  # inserted then updated: the latest values
        ("UPDATE_AFTER", last_update, 1, "a", 201),  # updated twice: latest values…
        ("UPDATE_BEFORE", base, 1, "a", 1),  # …and the values at the offset
    ]  # 10 (inserted then deleted) and 3 (untouched) do not show
    assert desc(lake, "s")["pending_commits"] == 4


def test_a_delete_of_every_row_shows_a_delete_per_row(lake: LakeSession) -> None:
    base = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST; DELETE FROM t")
    assert changes(lake, "s") == [
        ("DELETE", base, 1, "a", 1),
        ("DELETE", base, 2, "b", 2),
        ("DELETE", base, 3, "c", 3),
    ]


def test_row_identity_survives_optimize_and_merge(spark: SparkSession, lake: LakeSession) -> None:
    first = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql("INSERT INTO t VALUES (3, 'c', 3)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    location = lake.catalog.relation("t").location
    (optimized,) = spark.sql(f"OPTIMIZE delta.`{location}`").collect()
    metrics = optimized["metrics"]
    assert metrics["numFilesAdded"] == 1
    assert metrics["numFilesRemoved"] > 1
    assert history(lake, "t")[latest(lake, "t")][1] == "OPTIMIZE"
    assert changes(lake, "s") == []
    assert desc(lake, "s")["pending_commits"] == 1

    lake.sql(
        "MERGE INTO t USING (SELECT 1 AS id, 50 AS age) m ON t.id = m.id "
        "WHEN MATCHED THEN UPDATE SET age = m.age"
    )
    merged = latest(lake, "t")
    assert changes(lake, "s") == [
        ("UPDATE_AFTER", merged, 1, "a", 50),
        ("UPDATE_BEFORE", first, 1, "a", 1),
    ]


def test_show_initial_rows_returns_the_rows_at_the_offset_on_the_first_consumption(
    lake: LakeSession,
) -> None:
    base = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql(
        "CREATE TABLE STREAM si ON TABLE t WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE'); "
        "CREATE TABLE tgt (id INT, name VARCHAR, age INT)"
    )
    assert changes(lake, "si") == [("INSERT", base, 1, "a", 1), ("INSERT", base, 2, "b", 2)]
    lake.sql("INSERT INTO t VALUES (3, 'c', 3)")
    third = latest(lake, "t")
    assert changes(lake, "si") == [
        ("INSERT", base, 1, "a", 1),
        ("INSERT", base, 2, "b", 2),
        ("INSERT", third, 3, "c", 3),
    ]
    lake.sql("INSERT INTO tgt SELECT id, name, age FROM si")
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1), (2, "b", 2), (3, "c", 3)]
    assert changes(lake, "si") == []
    described = desc(lake, "si")
    assert (described["show_initial_rows"], described["offset_version"]) == (True, third)
    lake.sql("UPDATE t SET age = 20 WHERE id = 2")
    assert changes(lake, "si") == [
        ("UPDATE_AFTER", latest(lake, "t"), 2, "b", 20),
        ("UPDATE_BEFORE", base, 2, "b", 2),
    ]


def test_old_images_of_rows_written_before_the_stream_carry_the_version_that_wrote_them(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    first = latest(lake, "t")
    lake.sql("INSERT INTO t VALUES (3, 'c', 3)")
    second = latest(lake, "t")
    lake.sql("CREATE TABLE STREAM s ON TABLE t; UPDATE t SET age = 5 WHERE id IN (1, 3)")
    updated = latest(lake, "t")
    assert changes(lake, "s") == [
        ("UPDATE_AFTER", updated, 1, "a", 5),
        ("UPDATE_AFTER", updated, 3, "c", 5),
        ("UPDATE_BEFORE", first, 1, "a", 1),
        ("UPDATE_BEFORE", second, 3, "c", 3),
    ]
    # An overwrite is read Delta's way: its old rows show the versions that wrote them too.
    lake.sql("ALTER STREAM s SET OFFSET LATEST; INSERT OVERWRITE t VALUES (4, 'd', 4)")
    assert changes(lake, "s") == [
        ("DELETE", first, 2, "b", 2),
        ("DELETE", updated, 1, "a", 5),
        ("DELETE", updated, 3, "c", 5),
        ("INSERT", latest(lake, "t"), 4, "d", 4),
    ]
    times = {version: time for version, (time, _) in history(lake, "t").items()}
    (result,) = lake.sql("SELECT __commit_version, __commit_timestamp FROM s")
    assert {version: time for version, time in result.rows} == {
        version: times[version] for version in (updated, first, latest(lake, "t"))
    }


def test_initial_rows_of_an_append_only_stream_carry_the_version_that_wrote_them(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    first = latest(lake, "t")
    lake.sql(
        "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES "
        "('TABLE_STREAM_MODE' = 'APPEND_ONLY', 'SHOW_INITIAL_ROWS' = 'TRUE'); "
        "INSERT INTO t VALUES (2, 'b', 2)"
    )
    assert changes(lake, "s") == [
        ("INSERT", first, 1, "a", 1),
        ("INSERT", latest(lake, "t"), 2, "b", 2),
    ]
