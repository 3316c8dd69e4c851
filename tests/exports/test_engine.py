"""Changelog exports through the SQL surface, on real Spark and Delta: U, DA and DR records on a
two-column key, the range's bounds, empty ranges, and bad input refused in one line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from lake_assets.session import LakeSession
from tests.exports.export_helpers import (
    DAY,
    KEYED,
    commit_times,
    latest,
    message,
    ranged,
    records,
    rows,
    run,
    status,
)
from tests.ingest_helpers import files, local_volume, refused


def test_two_key_columns_give_u_da_and_dr_records_in_sequence(
    lake: LakeSession, writer: str
) -> None:
    """Six commits on a table keyed by two columns give one record each; a DO (one version of
    a column deleted) has no counterpart in a single-version table and is never produced."""
    lake.sql(
        "CREATE TABLE t (pk1 STRING, pk2 STRING, col_a STRING, col_b STRING, "
        "PRIMARY KEY (pk1, pk2)); ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO t VALUES ('pk1_V2', 'pk2_V2', 'col_val0', 'col_val0'), "
        "('pk1_V3', 'pk2_V3', 'col_val0', NULL)"
    )
    before = latest(lake, "t")
    lake.sql(
        "INSERT INTO t VALUES ('pk1_V1', 'pk2_V1', 'col_val1', NULL); "
        "UPDATE t SET col_a = 'col_val2' WHERE pk1 = 'pk1_V1'; "
        "UPDATE t SET col_b = 'col_val3' WHERE pk1 = 'pk1_V1' AND pk2 = 'pk2_V1'; "
        "UPDATE t SET col_b = NULL WHERE pk1 = 'pk1_V2'; "
        "DELETE FROM t WHERE pk1 = 'pk1_V3'; "
        "INSERT INTO t VALUES ('pk1_V3', 'pk2_V3', 'col_val1', NULL)"
    )
    times = commit_times(lake, "t")
    versions = list(range(before + 1, before + 7))
    assert max(times) == versions[-1]
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r EXPORT_SEQUENCE_INFO = TRUE")
    assert rows(lake, "DESC TABLE r") == [
        ("pk1", "STRING", None, None, None),
        ("pk2", "STRING", None, None, None),
        ("column_name", "STRING", None, None, None),
        ("version", "BIGINT", None, None, None),
        ("column_value", "STRING", None, None, None),
        ("op_type", "STRING", None, None, None),
        ("sequence_info", "STRING", None, None, None),
    ]

    # From the first of the six commits to just after the last.
    start, end = times[versions[0]], times[versions[-1]] + 1
    result = run(lake, ranged("e", start, end))
    assert result == {
        "export": "e",
        "range": f"range={start}-{end}",
        "first_version": versions[0],
        "last_version": versions[-1],
        "records": 6,
        "U": 4,
        "DO": 0,
        "DA": 1,
        "DR": 1,
        "versions_read": versions[-1] + 1,  # from the oldest commit: no status row yet
        "complete": True,
    }

    def seq(version: int, position: int) -> str:
        return f"{version:020d}:{position:010d}"

    v1, v2, v3, v4, v5, v6 = versions
    assert rows(lake, "SELECT * FROM r ORDER BY sequence_info") == [
        ("pk1_V1", "pk2_V1", "col_a", times[v1], "col_val1", "U", seq(v1, 1)),
        ("pk1_V1", "pk2_V1", "col_a", times[v2], "col_val2", "U", seq(v2, 1)),
        ("pk1_V1", "pk2_V1", "col_b", times[v3], "col_val3", "U", seq(v3, 1)),
        ("pk1_V2", "pk2_V2", "col_b", times[v4], None, "DA", seq(v4, 1)),
        ("pk1_V3", "pk2_V3", None, times[v5], None, "DR", seq(v5, 1)),
        ("pk1_V3", "pk2_V3", "col_a", times[v6], "col_val1", "U", seq(v6, 1)),
    ]
    assert rows(lake, "SELECT count(*) FROM r WHERE op_type = 'DO'") == [(0,)]
    # The status table is a real table; its one row says where the next export starts.
    assert status(lake) == [("e", "t", start, end, 0, versions[-1], True, 6, versions[-1] + 1)]

    assert rows(lake, "SHOW CHANGELOG EXPORTS")[0][:6] == (
        "e",
        "t",
        "TABLE r",
        "lake_changelog_status",
        True,
        None,
    )
    described = dict(rows(lake, "DESC CHANGELOG EXPORT e"))
    assert {key: described[key] for key in list(described)[:9]} == {
        "name": "e",
        "source": "t",
        "primary_key": "pk1, pk2",
        "target": "TABLE r",
        "file_format": None,
        "status_table": "lake_changelog_status",
        "export_sequence_info": "TRUE",
        "max_retries": "30",
        "comment": None,
    }


def test_the_range_is_left_closed_and_right_open(lake: LakeSession) -> None:
    """A commit exactly at END is the next range's; one exactly at START is this one's."""
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL); INSERT INTO t VALUES (2, 'b', NULL)")
    times = commit_times(lake, "t")
    first, second = max(times) - 1, max(times)
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    result = run(lake, ranged("e", times[first], times[second]))
    assert (result["first_version"], result["last_version"], result["records"]) == (first, first, 1)
    assert result["complete"] is True
    assert records(lake, "r") == [(1, "a", times[first], "a", "U")]
    result = run(lake, ranged("e", times[second], times[second] + 1))
    assert (result["first_version"], result["last_version"], result["records"]) == (
        second,
        second,
        1,
    )
    # The second range starts where the first left off: only the commit at its start is read.
    assert result["versions_read"] == 1
    assert records(lake, "r") == [
        (1, "a", times[first], "a", "U"),
        (2, "a", times[second], "b", "U"),
    ]


def test_a_range_without_records_is_exported_empty_and_then_up_to_date(lake: LakeSession) -> None:
    """A range of no commits, one of commits without data (CREATE, properties), and one whose
    only commit changes nothing (an UPDATE to the values the row has): no records, a status
    row, and then nothing to do."""
    lake.sql(
        f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL); UPDATE t SET a = 'a' WHERE k = 1; "
        "INSERT INTO t VALUES (2, 'b', NULL)"
    )
    times = commit_times(lake, "t")
    inserted = max(times) - 2
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    cases = (
        # CREATE TABLE and SET PROPERTIES only
        (0, times[inserted], None, inserted - 1),
        # the UPDATE changing nothing
        (times[inserted + 1], times[inserted + 2], inserted + 1, inserted + 1),
        # between two commits: none
        (times[inserted] + 1, times[inserted + 1], None, inserted),
    )
    for start, end, commit, last in cases:
        result = run(lake, ranged("e", start, end))
        assert (result["records"], result["first_version"], result["last_version"]) == (
            0,
            commit,
            commit,
        )
        assert result["complete"] is True
        assert status(lake)[-1][2:7] == (start, end, status(lake)[-1][4], last, True)
        assert message(lake, ranged("e", start, end)).endswith(
            "is up to date (exported already, nothing committed since)"
        )
    assert records(lake, "r") == []
    assert len(status(lake)) == 3


def test_bad_input_is_refused_with_one_line(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE plain (k INT, a STRING); CREATE TABLE untracked (k INT, a STRING, "
        f"PRIMARY KEY (k)); {KEYED}; CREATE TABLE STREAM s ON TABLE t; "
        "CREATE TABLE narrow (x INT)"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE plain TO TABLE r") == (
        "table plain has no primary key, which a changelog export needs — declare one with "
        "ALTER TABLE plain SET PRIMARY KEY (col, …)"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE nowhere TO TABLE r") == (
        "table nowhere does not exist — check the name with SHOW TABLES or create it with "
        "CREATE TABLE"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE untracked TO TABLE r") == (
        "table untracked does not track its changes, which a changelog export reads — ALTER "
        "TABLE untracked SET PROPERTIES ('change_tracking' = 'true') first; changes committed "
        "from then on can be exported"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE s TO TABLE r") == (
        "s is a stream: a changelog export reads a table or a dynamic table — export the table "
        "it reads instead of s"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE narrow") == (
        "table narrow cannot hold the records of changelog export e: it needs the columns "
        "k INT, column_name STRING, version BIGINT, column_value STRING, op_type STRING — name "
        "another table, or drop this one"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE t") == (
        "table t cannot take export e's records: the export reads it — give each export a "
        "table of its own"
    )
    assert refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE t TO VOLUME nowhere").startswith(
        "volume nowhere does not exist — "
    )
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    assert refused(lake, "CREATE CHANGELOG EXPORT e2 FROM TABLE t TO TABLE r") == (
        "table r cannot take export e2's records: changelog export e writes it — give each "
        "export a table of its own"
    )
    assert refused(lake, "EXPORT CHANGELOG nothing (DATE => '20261124')") == (
        "changelog export nothing does not exist — check the name with SHOW CHANGELOG EXPORTS "
        "or create it with CREATE CHANGELOG EXPORT"
    )
    assert refused(lake, "DESC CHANGELOG EXPORT nothing").startswith(
        "changelog export nothing does not exist — "
    )
    assert refused(lake, "DROP CHANGELOG EXPORT nothing").startswith(
        "changelog export nothing does not exist — "
    )
    assert message(lake, "DROP CHANGELOG EXPORT IF EXISTS nothing") is not None
    # Nothing refused was kept.
    assert [row[0] for row in rows(lake, "SHOW CHANGELOG EXPORTS")] == ["e"]


def duplicate_key(name: str) -> str:
    return (
        f"changelog export {name}: two rows of one commit of t share the primary key (k) — a "
        "key is declared, not enforced: make the key's values unique in the table, or declare "
        "a key that is"
    )


def test_two_rows_of_one_commit_sharing_the_key_fail_the_export_and_write_nothing(
    lake: LakeSession, tmp_path: Path
) -> None:
    directory = local_volume(lake, tmp_path / "volume")
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', 'b')")
    start = commit_times(lake, "t")[latest(lake, "t")]
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    end = start + DAY // timedelta(milliseconds=1)  # still open: commits may join it
    assert run(lake, ranged("e", start, end))["records"] == 2
    exported, statuses = records(lake, "r"), status(lake)
    assert len(statuses) == 1

    lake.sql("INSERT INTO t VALUES (2, 'x', NULL), (2, 'y', NULL)")
    again = refused(lake, ranged("e", start, end))
    assert (records(lake, "r"), status(lake)) == (exported, statuses)
    # A fresh export of the range, with no status row yet, writes none either; nor one to a
    # volume.
    lake.sql(
        "CREATE CHANGELOG EXPORT f FROM TABLE t TO TABLE rf STATUS_TABLE = 'other'; "
        "CREATE CHANGELOG EXPORT g FROM TABLE t TO VOLUME v STATUS_TABLE = 'other'"
    )
    fresh = refused(lake, ranged("f", start, end))
    to_volume = refused(lake, ranged("g", start, end))
    assert (records(lake, "rf"), status(lake, "other"), files(directory)) == ([], [], [])
    assert to_volume == duplicate_key("g")
    assert (again, fresh) == (duplicate_key("e"), duplicate_key("f"))


def test_a_changed_row_with_a_null_key_fails_the_export_and_writes_nothing(
    lake: LakeSession, tmp_path: Path, writer: str
) -> None:
    directory = local_volume(lake, tmp_path / "volume")
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', 'b')")
    start = commit_times(lake, "t")[latest(lake, "t")]
    lake.sql(
        "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r; "
        "CREATE CHANGELOG EXPORT g FROM TABLE t TO VOLUME v"
    )
    end = start + DAY // timedelta(milliseconds=1)  # still open: commits may join it
    assert run(lake, ranged("e", start, end))["records"] == 2
    exported, statuses = records(lake, "r"), status(lake)

    lake.sql("INSERT INTO t VALUES (NULL, 'x', NULL)")
    for name in ("e", "g"):
        assert refused(lake, ranged(name, start, end)) == (
            f"changelog export {name}: a row of t changed in this range has a NULL primary key "
            "(k) — a key is declared, not enforced: give those rows a key (UPDATE t SET … WHERE "
            "k IS NULL) and export the ranges after that change, or declare a key that is never "
            "NULL"
        )
    assert (records(lake, "r"), status(lake), files(directory)) == (exported, statuses, [])
