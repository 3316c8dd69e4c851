"""SHOW, DESC and DROP STREAM, streams on dynamic tables, streams read in queries, bad input."""

from __future__ import annotations

import pytest

from lake_assets.session import LakeSession
from lake_assets.streams import offsets
from tests.ingest_helpers import refused
from tests.streams.stream_helpers import (
    TABLE,
    changes,
    desc,
    history,
    latest,
    message,
    rows,
    tracked,
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
