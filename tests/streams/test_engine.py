"""Table streams through the SQL surface, on real Spark and Delta: an APPEND_ONLY stream, a
STANDARD one consumed by INSERT … SELECT and by the consumer MERGE, the net change rules,
positions (AT, ALTER STREAM … SET OFFSET), SHOW/DESC/DROP, streams on dynamic tables, reading in
queries, consuming writes and their offsets, staleness, bad input, and claims."""

from __future__ import annotations

import os
import socket
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.delta import session_conf
from lake_assets.session import LakeSession
from lake_assets.streams import offsets
from lake_assets.streams.entry import Claim, StreamEntry
from tests.ingest_helpers import refused

TABLE = "CREATE TABLE t (id INT, name VARCHAR, age INT)"
METADATA = ["__change_type", "__commit_version", "__commit_timestamp"]
CONSUMER_MERGE = (
    "MERGE INTO {target} target USING {stream} source_stream ON target.id = source_stream.id "
    "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' THEN update set target.age = "
    "source_stream.age WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
    "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' THEN INSERT VALUES "
    "(source_stream.id, source_stream.name, source_stream.age)"
)


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    """A query's rows, sorted."""
    (result,) = lake.sql(sql)
    return sorted(tuple(row) for row in result.rows)


def message(lake: LakeSession, sql: str) -> str:
    (result,) = lake.sql(sql)
    assert result.message is not None
    return result.message


def changes(lake: LakeSession, stream: str) -> list[tuple]:
    """A stream's rows without their commit times, sorted: (change type, version, columns…)."""
    (result,) = lake.sql(f"SELECT * FROM {stream}")
    assert result.columns[:3] == METADATA
    return sorted((row[0], row[1], *row[3:]) for row in result.rows)


def desc(lake: LakeSession, stream: str) -> dict[str, Any]:
    (result,) = lake.sql(f"DESC STREAM {stream}")
    return dict(result.rows)


def history(lake: LakeSession, table: str) -> dict[int, tuple[datetime, str]]:
    """DESC HISTORY as version → (commit time, operation)."""
    (result,) = lake.sql(f"DESC HISTORY {table}")
    return {row[0]: (row[1], row[2]) for row in result.rows}


def latest(lake: LakeSession, table: str) -> int:
    return max(history(lake, table))


def tracked(lake: LakeSession, rows_sql: str) -> int:
    """Table t, stream s (turning change tracking on), then `rows_sql`; the version it wrote."""
    lake.sql(f"{TABLE}; CREATE TABLE STREAM s ON TABLE t; {rows_sql}")
    return latest(lake, "t")


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


def test_at_version_and_at_timestamp(lake: LakeSession) -> None:
    v1 = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("INSERT INTO t VALUES (2, 'b', 2)")
    v2 = latest(lake, "t")
    lake.sql("INSERT INTO t VALUES (3, 'c', 3)")
    v3 = latest(lake, "t")
    commits = history(lake, "t")
    between = commits[v2][0] + (commits[v3][0] - commits[v2][0]) / 2

    lake.sql(f"CREATE TABLE STREAM by_version ON TABLE t AT (VERSION => {v1})")
    lake.sql(f"CREATE TABLE STREAM by_time ON TABLE t AT (TIMESTAMP => '{commits[v2][0]}')")
    lake.sql(f"CREATE TABLE STREAM by_between ON TABLE t AT (TIMESTAMP => '{between}')")
    assert desc(lake, "by_version")["offset_version"] == v1
    assert changes(lake, "by_version") == [("INSERT", v2, 2, "b", 2), ("INSERT", v3, 3, "c", 3)]
    for stream in ("by_time", "by_between"):
        assert desc(lake, stream)["offset_version"] == v2
        assert changes(lake, stream) == [("INSERT", v3, 3, "c", 3)]


def test_at_a_time_before_the_first_commit_is_refused(lake: LakeSession) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    assert refused(
        lake, "CREATE TABLE STREAM old ON TABLE t AT (TIMESTAMP => '2000-01-01 00:00:00')"
    ).startswith("t has no version at or before 2000-01-01 00:00:00 — pick a time from ")


def test_a_time_in_the_future_is_refused_not_taken_as_the_latest_version(
    lake: LakeSession,
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    offset = desc(lake, "s")["offset_version"]
    future = "2999-01-01 00:00:00"
    refusal = (
        f"t has no version at {future}: that time is in the future — pick a time that has "
        "passed; for the newest version leave out AT, or use ALTER STREAM … SET OFFSET LATEST"
    )
    assert refused(lake, f"CREATE TABLE STREAM later ON TABLE t AT (TIMESTAMP => '{future}')") == (
        refusal
    )
    assert refused(lake, f"ALTER STREAM s SET OFFSET (TIMESTAMP => '{future}')") == refusal
    assert [row[0] for row in rows(lake, "SHOW STREAMS")] == ["s"]
    assert desc(lake, "s")["offset_version"] == offset


def test_an_append_only_stream_at_a_version_before_change_tracking_is_refused(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    assert refused(
        lake,
        "CREATE TABLE STREAM s ON TABLE t AT (VERSION => 0) "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')",
    ) == (
        "t had no change tracking at version 0 — "
        "pick a version from when change tracking was on, or leave out AT"
    )
    assert rows(lake, "SHOW STREAMS") == []


def test_a_standard_stream_at_a_version_before_change_tracking_is_refused(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    assert refused(lake, "CREATE TABLE STREAM s ON TABLE t AT (VERSION => 1)") == (
        "t had no change tracking at version 1 — "
        "pick a version from when change tracking was on, or leave out AT"
    )


def test_a_refused_create_stream_changes_nothing(lake: LakeSession) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    before = history(lake, "t")
    refused(
        lake,
        "CREATE TABLE STREAM s ON TABLE t AT (VERSION => 0) "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')",
    )
    assert history(lake, "t") == before


def test_a_stream_at_the_latest_version_of_an_untracked_table_is_refused_and_changes_nothing(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    before = history(lake, "t")
    assert refused(lake, f"CREATE TABLE STREAM s ON TABLE t AT (VERSION => {latest(lake, 't')})")
    assert history(lake, "t") == before
    assert rows(lake, "SHOW TABLES")[0][2] is False
    assert rows(lake, "SHOW STREAMS") == []


def test_an_offset_is_refused_when_tracking_was_off_at_any_version_after_it(
    lake: LakeSession,
) -> None:
    on = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("ALTER TABLE t SET PROPERTIES ('change_tracking' = 'false')")
    off = latest(lake, "t")
    lake.sql(
        "INSERT INTO t VALUES (2, 'b', 2); "
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"
    )
    back = latest(lake, "t")
    expected = (
        f"t had no change tracking at version {off} — "
        "pick a version from when change tracking was on, or leave out AT"
    )
    assert refused(lake, f"CREATE TABLE STREAM s2 ON TABLE t AT (VERSION => {on})") == expected
    assert refused(lake, f"ALTER STREAM s SET OFFSET (VERSION => {on})") == expected
    assert message(lake, f"CREATE TABLE STREAM s2 ON TABLE t AT (VERSION => {back})") == (
        f"created stream s2 on table t at version {back}"
    )


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


def test_alter_stream_set_offset(lake: LakeSession) -> None:
    v1 = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("INSERT INTO t VALUES (2, 'b', 2)")
    v2 = latest(lake, "t")
    commits = history(lake, "t")
    created = desc(lake, "s")["offset_version"]

    assert message(lake, f"ALTER STREAM s SET OFFSET (VERSION => {v1})") == (
        f"stream s is now at version {v1} (was {created})"
    )
    assert changes(lake, "s") == [("INSERT", v2, 2, "b", 2)]
    lake.sql(f"ALTER STREAM s SET OFFSET (TIMESTAMP => '{commits[created][0]}')")
    assert desc(lake, "s")["offset_version"] == created
    assert changes(lake, "s") == [("INSERT", v1, 1, "a", 1), ("INSERT", v2, 2, "b", 2)]
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    assert desc(lake, "s")["offset_version"] == v2
    assert changes(lake, "s") == []
    assert refused(lake, "ALTER STREAM s SET OFFSET (VERSION => 99)") == (
        f"t has no version 99 — pick a version from 0 to {v2}"
    )
    assert refused(lake, "ALTER STREAM nope SET OFFSET LATEST").startswith(
        "stream nope does not exist — "
    )


def test_show_streams_and_show_table_streams(lake: LakeSession) -> None:
    lake.sql(
        f"{TABLE}; CREATE TABLE STREAM s ON TABLE t COMMENT 'net'; "
        "CREATE TABLE STREAM a ON TABLE t WITH PROPERTIES "
        "('TABLE_STREAM_MODE' = 'APPEND_ONLY', 'SHOW_INITIAL_ROWS' = 'TRUE')"
    )
    version = latest(lake, "t")
    (result,) = lake.sql("SHOW TABLE STREAMS")
    assert result.columns[:7] == [
        "name", "source", "source_kind", "mode", "show_initial_rows", "offset", "comment",
    ]  # fmt: skip
    assert sorted(tuple(row[:7]) for row in result.rows) == [
        ("a", "t", "TABLE", "APPEND_ONLY", True, version, None),
        ("s", "t", "TABLE", "STANDARD", False, version, "net"),
    ]
    assert rows(lake, "SHOW STREAMS") == rows(lake, "SHOW TABLE STREAMS")


def test_desc_stream_shows_every_property(lake: LakeSession) -> None:
    lake.sql(f"{TABLE}; CREATE TABLE STREAM s ON TABLE t COMMENT 'to the replica'")
    offset = latest(lake, "t")
    described = desc(lake, "s")
    commits = history(lake, "t")
    assert described == {
        "name": "s",
        "source": "t",
        "source_kind": "TABLE",
        "mode": "STANDARD",
        "show_initial_rows": False,
        "offset_version": offset,
        "offset_time": commits[offset][0],
        "source_latest_version": offset,
        "pending_commits": 0,
        "stale": False,
        "stale_reason": None,
        "stale_after": commits[offset][0] + offsets.FILE_RETENTION,
        "consumer": None,
        "comment": "to the replica",
        "created_at": described["created_at"],
    }
    lake.sql("INSERT INTO t VALUES (1, 'a', 1); INSERT INTO t VALUES (2, 'b', 2)")
    described = desc(lake, "s")
    commits = history(lake, "t")
    assert (
        described["offset_version"],
        described["source_latest_version"],
        described["pending_commits"],
        described["stale_after"],
    ) == (offset, offset + 2, 2, commits[offset + 1][0] + offsets.FILE_RETENTION)


def test_drop_stream(lake: LakeSession) -> None:
    lake.sql(
        f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1); "
        "CREATE TABLE STREAM s ON TABLE t; CREATE TABLE STREAM s2 ON TABLE t"
    )
    assert message(lake, "DROP STREAM s") == "dropped stream s"
    assert message(lake, "DROP TABLE STREAM s2") == "dropped stream s2"
    assert message(lake, "DROP TABLE STREAM IF EXISTS s2") == (
        "stream s2 does not exist; nothing to do"
    )
    assert message(lake, "DROP STREAM IF EXISTS s") == "stream s does not exist; nothing to do"
    assert refused(lake, "DROP STREAM s") == (
        "stream s does not exist — "
        "check the name with SHOW TABLE STREAMS or create it with CREATE TABLE STREAM"
    )
    assert rows(lake, "SHOW STREAMS") == []
    assert rows(lake, "SELECT * FROM t") == [(1, "a", 1)]


def test_a_stream_on_a_dynamic_table_shows_its_refreshes(lake: LakeSession) -> None:
    lake.sql(
        f"{TABLE}; CREATE DYNAMIC TABLE d AS SELECT id, age * 2 AS dbl FROM t; "
        "CREATE TABLE STREAM ds ON DYNAMIC TABLE d; "
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)"
    )
    assert changes(lake, "ds") == []
    lake.sql("REFRESH DYNAMIC TABLE d")
    refreshed = latest(lake, "d")
    assert changes(lake, "ds") == [("INSERT", refreshed, 1, 2), ("INSERT", refreshed, 2, 4)]
    described = desc(lake, "ds")
    assert (described["source"], described["source_kind"]) == ("d", "DYNAMIC_TABLE")

    lake.sql("CREATE TABLE copy (id INT, dbl INT); INSERT INTO copy SELECT id, dbl FROM ds")
    lake.sql("DELETE FROM t WHERE id = 1; REFRESH DYNAMIC TABLE d")
    assert changes(lake, "ds") == [("DELETE", refreshed, 1, 2)]
    assert desc(lake, "ds")["pending_commits"] == 1


def test_a_stream_on_a_fully_refreshed_dynamic_table_sees_only_the_rows_that_differ(
    lake: LakeSession,
) -> None:
    """A FULL refresh recomputes every row but writes only those that differ from the table's."""
    lake.sql(
        f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3); "
        "CREATE DYNAMIC TABLE d AS SELECT id, SUM(age) OVER (ORDER BY id) AS running FROM t; "
        "CREATE TABLE STREAM ds ON DYNAMIC TABLE d"
    )
    lake.sql("UPDATE t SET age = 30 WHERE id = 3; REFRESH DYNAMIC TABLE d")
    refreshed = latest(lake, "d")
    assert [(kind, columns) for kind, _, *columns in changes(lake, "ds")] == [
        ("DELETE", [3, 6]), ("INSERT", [3, 33]),
    ]  # fmt: skip
    assert changes(lake, "ds")[1][1] == refreshed
    (result,) = lake.sql("SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'd'")
    newest = dict(zip(result.columns, result.rows[0], strict=True))
    assert (newest["refresh_mode"], newest["rows_inserted"], newest["rows_deleted"]) == (
        "FULL", 1, 1,
    )  # fmt: skip


def test_a_stream_reads_in_joins_ctes_and_subqueries_and_select_never_moves_it(
    lake: LakeSession,
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    offset = desc(lake, "s")["offset_version"]
    lake.sql("UPDATE t SET age = 10 WHERE id = 1; INSERT INTO t VALUES (3, 'c', 3)")
    assert rows(
        lake,
        "SELECT s.__change_type, s.id, t.age FROM s JOIN t ON s.id = t.id "
        "WHERE s.__change_type <> 'UPDATE_BEFORE'",
    ) == [("INSERT", 3, 3), ("UPDATE_AFTER", 1, 10)]
    assert rows(
        lake,
        "WITH c AS (SELECT __change_type, COUNT(*) AS n FROM s GROUP BY __change_type) "
        "SELECT * FROM c",
    ) == [("INSERT", 1), ("UPDATE_AFTER", 1), ("UPDATE_BEFORE", 1)]
    assert rows(lake, "SELECT name FROM t WHERE id IN (SELECT id FROM s)") == [("a",), ("c",)]
    assert rows(lake, "SELECT (SELECT MAX(age) FROM s) AS top, COUNT(*) FROM t") == [(10, 3)]
    assert rows(
        lake, "SELECT a.id FROM s a JOIN s b ON a.id = b.id AND a.__change_type < b.__change_type"
    ) == [(1,)]
    described = desc(lake, "s")
    assert (described["offset_version"], described["pending_commits"]) == (offset, 2)


CONSUMERS = {
    "insert": (
        "INSERT INTO tgt SELECT id, name, age FROM s WHERE __change_type = 'INSERT'",
        [(1, "a", 1), (2, "b", 2), (3, "c", 3)],
    ),
    "insert overwrite": (
        "INSERT OVERWRITE tgt SELECT id, name, age FROM s WHERE __change_type = 'INSERT'",
        [(3, "c", 3)],
    ),
    "merge": (
        CONSUMER_MERGE.format(target="tgt", stream="s"),
        [(1, "a", 1), (2, "b", 2), (3, "c", 3)],
    ),
    "update": (
        "UPDATE tgt SET age = -1 WHERE id IN (SELECT id - 1 FROM s)",
        [(1, "a", 1), (2, "b", -1)],
    ),
    "delete": ("DELETE FROM tgt WHERE id IN (SELECT id - 1 FROM s)", [(1, "a", 1)]),
    "delete not exists": (
        "DELETE FROM tgt WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.id = tgt.id + 1)",
        [(2, "b", 2)],
    ),
}


@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_a_consuming_write_moves_the_offset_to_the_version_it_read(
    lake: LakeSession, consumer: str
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql(
        "ALTER STREAM s SET OFFSET LATEST; CREATE TABLE tgt (id INT, name VARCHAR, age INT); "
        "INSERT INTO tgt SELECT * FROM t; INSERT INTO t VALUES (3, 'c', 3)"
    )
    read = latest(lake, "t")
    statement, expected = CONSUMERS[consumer]
    lake.sql(statement)
    assert rows(lake, "SELECT * FROM tgt") == expected
    described = desc(lake, "s")
    assert (described["offset_version"], described["pending_commits"]) == (read, 0)
    assert changes(lake, "s") == []


FAILING = {
    "merge cast error": CONSUMER_MERGE.format(target="tgt", stream="s").replace(
        "source_stream.age)", "CAST(source_stream.name AS INT))"
    ),
    "merge of two source rows on one target row": (
        "MERGE INTO tgt USING (SELECT id, age FROM s UNION ALL SELECT id, age FROM s) x "
        "ON tgt.id = 1 WHEN MATCHED THEN UPDATE SET age = x.age"
    ),
    "insert cast error": "INSERT INTO tgt SELECT id, name, CAST(name AS INT) FROM s",
    "delete with not in": "DELETE FROM tgt WHERE id NOT IN (SELECT id FROM s)",
}


@pytest.mark.parametrize("statement", list(FAILING))
def test_a_failed_consuming_statement_moves_nothing(lake: LakeSession, statement: str) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql(
        "ALTER STREAM s SET OFFSET LATEST; CREATE TABLE tgt (id INT, name VARCHAR, age INT); "
        "INSERT INTO tgt SELECT * FROM t; INSERT INTO t VALUES (2, 'b', 2)"
    )
    before = (desc(lake, "s"), changes(lake, "s"), latest(lake, "tgt"))
    refused(lake, FAILING[statement])
    assert (desc(lake, "s"), changes(lake, "s"), latest(lake, "tgt")) == before
    assert before[0]["pending_commits"] == 1
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]


@pytest.mark.parametrize("replaced", [False, True])
def test_a_stream_whose_source_was_dropped_or_replaced_is_stale(
    lake: LakeSession, replaced: bool
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("DROP TABLE t")
    if replaced:
        lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    why = "replaced" if replaced else "dropped"
    fix = (
        "recreate it with CREATE OR REPLACE TABLE STREAM s ON … , "
        "or move it with ALTER STREAM s SET OFFSET LATEST"
    )
    assert refused(lake, "SELECT * FROM s") == f"stream s is stale: its source t was {why} — {fix}"
    described = desc(lake, "s")
    assert (described["stale"], described["stale_reason"]) == (
        True,
        f"stream s is stale: its source t was {why}",
    )
    if replaced:
        lake.sql("CREATE OR REPLACE TABLE STREAM s ON TABLE t")
        assert desc(lake, "s")["stale"] is False
        assert changes(lake, "s") == []


def test_a_stream_whose_versions_expired_from_the_log_is_stale(
    spark: SparkSession, lake: LakeSession
) -> None:
    offset = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    location = lake.catalog.relation("t").location
    spark.sql(
        f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2')"
    )
    for number in range(2, 6):
        lake.sql(f"INSERT INTO t VALUES ({number}, 'x', {number})")
    # Log cleanup: the commits up to the last checkpoint go, pending ones included.
    log = Path(location) / "_delta_log"
    checkpoint = max(int(path.name[:20]) for path in log.glob("*.checkpoint.parquet"))
    assert checkpoint > offset + 1
    for version in range(checkpoint):
        (log / f"{version:020d}.json").unlink()
    assert len(rows(lake, "SELECT * FROM t")) == 5

    assert refused(lake, "SELECT * FROM s") == (
        f"stream s is stale: the versions after {offset} of t have expired — "
        "recreate it with CREATE OR REPLACE TABLE STREAM s ON … , "
        "or move it with ALTER STREAM s SET OFFSET LATEST"
    )
    assert desc(lake, "s")["stale"] is True
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    assert changes(lake, "s") == []


def vacuum_everything(spark: SparkSession, lake: LakeSession, table: str) -> None:
    """VACUUM with no retention: it deletes every file the latest version does not read."""
    location = lake.catalog.relation(table).location
    with session_conf(spark, {"spark.databricks.delta.retentionDurationCheck.enabled": "false"}):
        spark.sql(f"VACUUM delta.`{location}` RETAIN 0 HOURS").collect()


def test_a_stream_whose_files_were_vacuumed_is_stale(
    spark: SparkSession, lake: LakeSession
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST; UPDATE t SET age = 5 WHERE id = 1")
    vacuum_everything(spark, lake, "t")
    assert desc(lake, "s")["stale"] is True
    assert refused(lake, "SELECT * FROM s").startswith("stream s is stale: ")


def test_a_first_read_with_initial_rows_needs_only_the_snapshot_at_its_end(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql(
        "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE'); "
        "UPDATE t SET age = 5 WHERE id = 1"
    )
    vacuum_everything(spark, lake, "t")
    assert desc(lake, "s")["stale"] is False
    assert sorted((kind, *values) for kind, _, *values in changes(lake, "s")) == [
        ("INSERT", 1, "a", 5),
        ("INSERT", 2, "b", 2),
    ]


WRITES_INTO_STREAM = (
    "s is a stream: it shows another table's changes and cannot be written — read it with "
    "SELECT … FROM s, and write the table it reads (t) or a table of your own instead"
)
BAD_INPUT = {
    "unknown stream": (
        "SELECT * FROM nope",
        "table nope does not exist — check the name with SHOW TABLES or create it with "
        "CREATE TABLE",
    ),
    "stream on a missing table": (
        "CREATE TABLE STREAM x ON TABLE nope",
        "cannot create stream x: table nope does not exist — check the name with SHOW TABLES",
    ),
    "stream on a table named as a dynamic table": (
        "CREATE TABLE STREAM x ON DYNAMIC TABLE t",
        "cannot create stream x: t is a table — write ON TABLE t",
    ),
    "unknown mode": (
        "CREATE TABLE STREAM x ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'DELTA')",
        "unknown TABLE_STREAM_MODE 'DELTA' — use 'STANDARD' or 'APPEND_ONLY'",
    ),
    "insert into a stream": ("INSERT INTO s VALUES (1, 'a', 1)", WRITES_INTO_STREAM),
    "update a stream": ("UPDATE s SET age = 1", WRITES_INTO_STREAM),
    "delete from a stream": ("DELETE FROM s WHERE id = 1", WRITES_INTO_STREAM),
    "merge into a stream": (
        "MERGE INTO s USING t ON s.id = t.id WHEN MATCHED THEN DELETE",
        WRITES_INTO_STREAM,
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_gets_one_clear_line(lake: LakeSession, case: str) -> None:
    lake.sql(f"{TABLE}; CREATE TABLE STREAM s ON TABLE t")
    version = latest(lake, "t")
    statement, expected = BAD_INPUT[case]
    assert refused(lake, statement) == expected
    assert [row[0] for row in rows(lake, "SHOW STREAMS")] == ["s"]
    assert latest(lake, "t") == version


def claim(lake: LakeSession, stream: str, owner: str) -> None:
    """Write a claim on `stream` as a consumer writing table tgt would."""
    target = lake.catalog.relation("tgt").location
    lake.catalog.update(
        StreamEntry,
        stream,
        lambda entry: replace(
            entry, claim=Claim("another-statement", target, 0, latest(lake, "t"), owner)
        ),
    )


def test_a_second_consumer_fails_clearly_and_writes_nothing(lake: LakeSession) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("CREATE TABLE tgt (id INT, name VARCHAR, age INT)")
    offset = desc(lake, "s")["offset_version"]
    claim(lake, "s", offsets.owner())
    target_version = latest(lake, "tgt")

    assert refused(lake, "INSERT INTO tgt SELECT id, name, age FROM s") == (
        f"stream s is being consumed by another statement (process {offsets.owner()}) — "
        "run this statement again when that one has finished; nothing was written"
    )
    assert latest(lake, "tgt") == target_version
    assert rows(lake, "SELECT * FROM tgt") == []
    described = desc(lake, "s")
    assert (described["offset_version"], described["consumer"]) == (offset, offsets.owner())
    assert changes(lake, "s") != []

    lake.catalog.update(StreamEntry, "s", lambda entry: replace(entry, claim=None))
    lake.sql("INSERT INTO tgt SELECT id, name, age FROM s")
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]


def test_a_claim_of_a_dead_process_is_settled_by_the_next_read(lake: LakeSession) -> None:
    inserted = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("CREATE TABLE tgt (id INT, name VARCHAR, age INT)")
    offset = desc(lake, "s")["offset_version"]
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert not os.path.exists(f"/proc/{pid_max + 1}")
    claim(lake, "s", f"{socket.gethostname()}:{pid_max + 1}:0.000")

    # Its write never landed in tgt: the claim goes, the offset stays.
    assert changes(lake, "s") == [("INSERT", inserted, 1, "a", 1)]
    entry = lake.catalog.get(StreamEntry, "s")
    assert (entry.claim, entry.offset) == (None, offset)
    lake.sql("INSERT INTO tgt SELECT id, name, age FROM s")
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]
