"""Changelog exports (issue 20) through the SQL surface, on real Spark and Delta: U, DA and DR
records on a two-column key, bad input, idempotent re-runs to a table and to a volume, resuming
from the status table, value types, history that is no longer kept, and retries of transient
failures."""

from __future__ import annotations

import base64
import csv
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lake_assets.core.delta import history
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.exports import writing
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.run import _retrying
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import files, local_volume, refused

RESULT = [
    "export",
    "range",
    "first_version",
    "last_version",
    "records",
    "U",
    "DO",
    "DA",
    "DR",
    "versions_read",
    "complete",
]
STATUS = "SELECT export, source, range_start, range_end, first_version, last_version, complete, "
STATUS += "records, versions_read FROM {table} ORDER BY exported_at"
KEYED = (
    "CREATE TABLE t (k INT, a STRING, b STRING, PRIMARY KEY (k)); "
    "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"
)
DAY = timedelta(days=1)


@pytest.fixture(params=["in-process", "spark"])
def writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways records reach a local table or a Parquet file: a small export's through Arrow in
    this process (delta-rs writes the table), a larger one's (here every one) through Spark."""
    if request.param == "spark":
        monkeypatch.setattr(writing, "_IN_PROCESS", 0)
    return str(request.param)


def millis(moment: datetime) -> int:
    """A naive UTC commit time in epoch milliseconds."""
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def commit_times(lake: LakeSession, table: str) -> dict[int, int]:
    """The table's versions and their commit times in ms, from its Delta log."""
    entry = lake.catalog.relation(table)
    assert isinstance(entry, TableEntry | DynamicTableEntry)
    return {commit.version: millis(commit.timestamp) for commit in history(None, entry.location)}


def latest(lake: LakeSession, table: str) -> int:
    return max(commit_times(lake, table))


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def run(lake: LakeSession, sql: str) -> dict[str, Any]:
    """EXPORT CHANGELOG's one result row, by column."""
    (result,) = lake.sql(sql)
    assert result.columns == RESULT
    (row,) = result.rows
    return dict(zip(RESULT, row, strict=True))


def ranged(name: str, start: int, end: int) -> str:
    return (
        f"EXPORT CHANGELOG {name} "
        f"(START_TIMESTAMP_MILLIS => {start}, END_TIMESTAMP_MILLIS => {end})"
    )


def message(lake: LakeSession, sql: str) -> str:
    (result,) = lake.sql(sql)
    assert result.message is not None
    return result.message


def records(lake: LakeSession, table: str, where: str = "TRUE") -> list[tuple]:
    """A target's records (key, column_name, version, column_value, op_type) in commit order."""
    return rows(
        lake,
        f"SELECT k, column_name, version, column_value, op_type FROM {table} WHERE {where} "
        "ORDER BY version, k, column_name",
    )


def status(lake: LakeSession, table: str = "lake_changelog_status") -> list[tuple]:
    return rows(lake, STATUS.format(table=table))


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
        ("pk1", "STRING", None, None),
        ("pk2", "STRING", None, None),
        ("column_name", "STRING", None, None),
        ("version", "BIGINT", None, None),
        ("column_value", "STRING", None, None),
        ("op_type", "STRING", None, None),
        ("sequence_info", "STRING", None, None),
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


def test_re_runs_to_a_table_hold_each_record_once(lake: LakeSession, writer: str) -> None:
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL), (2, 'b', 'c')")
    inserted = latest(lake, "t")
    start = commit_times(lake, "t")[inserted]
    end = start + DAY // timedelta(milliseconds=1)  # open: later commits fall in it
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    lake.sql("ALTER TABLE r SET PROPERTIES ('change_tracking' = 'true')")
    first = run(lake, ranged("e", start, end))
    assert (first["records"], first["U"], first["complete"]) == (3, 3, False)
    once = records(lake, "r")
    assert len(once) == 3
    assert message(lake, ranged("e", start, end)) == (
        f"changelog export e: range={start}-{end} is up to date (exported already, nothing "
        "committed since)"
    )
    assert records(lake, "r") == once
    assert len(status(lake)) == 1

    # New commits inside the range: the range is exported again whole, each record once.
    lake.sql("UPDATE t SET b = NULL, a = 'z' WHERE k = 2; DELETE FROM t WHERE k = 1")
    times = commit_times(lake, "t")
    again = run(lake, ranged("e", start, end))
    assert (again["records"], again["U"], again["DA"], again["DR"]) == (6, 4, 1, 1)
    assert (again["first_version"], again["last_version"]) == (inserted, inserted + 2)
    assert records(lake, "r") == [
        (1, "a", times[inserted], "a", "U"),
        (2, "a", times[inserted], "b", "U"),
        (2, "b", times[inserted], "c", "U"),
        (2, "a", times[inserted + 1], "z", "U"),
        (2, "b", times[inserted + 1], None, "DA"),
        (1, None, times[inserted + 2], None, "DR"),
    ]
    assert len(status(lake)) == 2
    # The replacement is one commit, and the target's own change feed has it: the three
    # records before deleted, the six after inserted.
    target = lake.catalog.get(TableEntry, "r")
    assert target.row_count == 6
    changes = lake.spark.sql(
        f"SELECT _change_type, count(*) FROM table_changes_by_path('{target.location}', "
        f"{target.version}, {target.version}) GROUP BY _change_type ORDER BY 1"
    ).collect()
    assert [tuple(row) for row in changes] == [("delete", 3), ("insert", 6)]

    # A status row lost (deleted by hand) with the records written: the next run replaces them.
    lake.sql("DELETE FROM lake_changelog_status WHERE export = 'e'")
    assert run(lake, ranged("e", start, end))["records"] == 6
    assert len(records(lake, "r")) == 6
    assert len(status(lake)) == 1


def day_of(moment: int) -> tuple[str, int, int]:
    """The UTC day of a time in ms: yyyyMMdd, and its start and end in ms."""
    day = datetime.fromtimestamp(moment / 1000, UTC).replace(hour=0, minute=0, second=0)
    day = day.replace(microsecond=0)
    return day.strftime("%Y%m%d"), millis(day.replace(tzinfo=None)), millis(day + DAY)


def parquet_records(path: Path) -> list[tuple]:
    table = pq.read_table(path)
    return sorted(
        (
            (r["k"], r["column_name"], r["version"], r["column_value"], r["op_type"])
            for r in table.to_pylist()
        ),
        key=repr,
    )


def csv_records(path: Path) -> list[tuple]:
    """CSV as Spark writes it (no header; NULL as an empty field)."""
    with path.open(newline="") as lines:
        return sorted(
            (
                (int(k), name or None, int(version), value or None, op)
                for k, name, version, value, op in csv.reader(lines)
            ),
            key=repr,
        )


def test_re_runs_to_a_volume_replace_the_range_s_one_file(
    lake: LakeSession, tmp_path: Path, writer: str
) -> None:
    directory = local_volume(lake, tmp_path / "volume")
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL), (2, 'b', 'c')")
    inserted = latest(lake, "t")
    times = commit_times(lake, "t")
    start = times[inserted]
    end = start + DAY // timedelta(milliseconds=1)
    day, day_start, day_end = day_of(times[inserted])
    lake.sql(
        "CREATE CHANGELOG EXPORT daily FROM TABLE t TO VOLUME v; "
        "CREATE CHANGELOG EXPORT ranges FROM TABLE t TO VOLUME v SUBDIRECTORY 'x/' "
        "FILE_FORMAT = (TYPE = CSV)"
    )
    daily = directory / f"date={day}" / "changelog.parquet"
    ranges = directory / "x" / f"range={start}-{end}" / "changelog.csv"

    def expected(*versions: int) -> list[tuple]:
        every = {
            inserted: [(1, "a", "a", "U"), (2, "a", "b", "U"), (2, "b", "c", "U")],
            inserted + 1: [(2, "a", "z", "U"), (2, "b", None, "DA")],
            inserted + 2: [(1, None, None, "DR")],
        }
        return sorted(
            (
                (k, name, times[version], value, op)
                for version in versions
                for k, name, value, op in every[version]
            ),
            key=repr,
        )

    def in_day(found: list[tuple]) -> list[tuple]:
        return [record for record in found if day_start <= record[2] < day_end]

    assert run(lake, f"EXPORT CHANGELOG daily (DATE => '{day}')")["range"] == f"date={day}"
    assert run(lake, ranged("ranges", start, end))["records"] == 3
    assert files(directory) == [
        daily.relative_to(directory).as_posix(),
        ranges.relative_to(directory).as_posix(),
    ]
    assert parquet_records(daily) == in_day(expected(inserted))
    assert csv_records(ranges) == expected(inserted)

    lake.sql("UPDATE t SET b = NULL, a = 'z' WHERE k = 2; DELETE FROM t WHERE k = 1")
    times = commit_times(lake, "t")
    assert run(lake, f"EXPORT CHANGELOG daily (DATE => '{day}')")["range"] == f"date={day}"
    assert run(lake, ranged("ranges", start, end))["records"] == 6
    # Replaced: still one file per range, each record once.
    assert files(directory) == [
        daily.relative_to(directory).as_posix(),
        ranges.relative_to(directory).as_posix(),
    ]
    all_three = expected(inserted, inserted + 1, inserted + 2)
    assert parquet_records(daily) == in_day(all_three)
    assert csv_records(ranges) == all_three
    assert message(lake, ranged("ranges", start, end)).endswith(
        "is up to date (exported already, nothing committed since)"
    )
    assert csv_records(ranges) == all_three


def test_an_export_resumes_where_the_range_before_it_ended(lake: LakeSession) -> None:
    lake.sql(
        f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL); INSERT INTO t VALUES (2, 'b', NULL); "
        "UPDATE t SET b = 'x' WHERE k = 1; INSERT INTO t VALUES (3, 'c', NULL); "
        "DELETE FROM t WHERE k = 2"
    )
    times = commit_times(lake, "t")
    newest = max(times)
    update = newest - 2  # range 2 starts at the UPDATE
    lake.sql(
        "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r; "
        "CREATE CHANGELOG EXPORT fresh FROM TABLE t TO TABLE rf STATUS_TABLE = 'fresh_status'"
    )
    one = run(lake, ranged("e", 0, times[update]))
    # Read from the oldest commit to the first one at or after the range's end.
    assert (one["versions_read"], one["complete"], one["last_version"]) == (
        update + 1,
        True,
        update - 1,
    )
    assert status(lake)[0][4:6] == (0, update - 1)

    end = times[newest] + 1
    two = run(lake, ranged("e", times[update], end))
    # Only the commits after range 1's last version: the UPDATE, the INSERT and the DELETE.
    assert (two["versions_read"], two["first_version"], two["last_version"]) == (3, update, newest)
    assert status(lake)[1][4:9] == (update, newest, True, 3, 3)
    # Without a status row, the same range reads from the oldest commit, and finds the same.
    alone = run(lake, ranged("fresh", times[update], end))
    assert alone["versions_read"] == newest + 1
    assert {k: v for k, v in alone.items() if k not in ("export", "versions_read")} == {
        k: v for k, v in two.items() if k not in ("export", "versions_read")
    }
    in_two = f"version >= {times[update]}"
    assert (
        records(lake, "r", in_two)
        == records(lake, "rf", in_two)
        == [
            (1, "b", times[update], "x", "U"),
            (3, "a", times[update + 1], "c", "U"),
            (2, None, times[newest], None, "DR"),
        ]
    )

    # Ranges exported in full: nothing to read again, and no new status row.
    for start, stop in ((0, times[update]), (times[update], end)):
        assert message(lake, ranged("e", start, stop)).endswith(
            "is up to date (exported already, nothing committed since)"
        )
    assert len(status(lake)) == 2

    # DROP forgets the export's status rows (only its own): created again, it starts afresh.
    lake.sql("DROP CHANGELOG EXPORT e")
    assert status(lake) == []
    assert len(status(lake, "fresh_status")) == 1
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    assert run(lake, ranged("e", times[update], end))["versions_read"] == newest + 1
    assert len(records(lake, "r")) == 5  # range 1's two records and range 2's three, once


def test_values_of_every_type_as_strings(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE ty (k INT, i INT, bi BIGINT, d DOUBLE, dec DECIMAL(10, 2), bo BOOLEAN, "
        "dt DATE, ts TIMESTAMP, bin BINARY, s STRING, PRIMARY KEY (k)); "
        "ALTER TABLE ty SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO ty VALUES (1, 7, 9000000000, 2.5, 12.3, true, DATE'2026-01-02', "
        "TIMESTAMP'2026-01-02 03:04:05.123', X'CAFE', 'é, \"x\"'), "
        "(2, -1, NULL, -0.125, -0.5, false, NULL, TIMESTAMP'2026-01-02 00:00:00', X'', '')"
    )
    inserted = latest(lake, "ty")
    # BINARY cleared: a DA; the same DOUBLE again: no record.
    lake.sql("UPDATE ty SET bin = NULL, d = 2.5, bi = 1 WHERE k = 1")
    times = commit_times(lake, "ty")
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE ty TO TABLE r")
    assert run(lake, ranged("e", times[inserted], times[inserted + 1] + 1))["records"] == 18
    first, second = times[inserted], times[inserted + 1]
    assert (
        sorted(records(lake, "r"), key=repr)
        == sorted(
            [
                (1, "i", first, "7", "U"),
                (1, "bi", first, "9000000000", "U"),
                (1, "d", first, "2.5", "U"),
                (1, "dec", first, "12.30", "U"),
                (1, "bo", first, "true", "U"),
                (1, "dt", first, "2026-01-02", "U"),
                (1, "ts", first, "2026-01-02 03:04:05.123", "U"),
                (1, "bin", first, "yv4=", "U"),
                (1, "s", first, 'é, "x"', "U"),
                (2, "i", first, "-1", "U"),
                (2, "d", first, "-0.125", "U"),
                (2, "dec", first, "-0.50", "U"),
                (2, "bo", first, "false", "U"),
                (2, "ts", first, "2026-01-02 00:00:00", "U"),
                (2, "bin", first, "", "U"),  # an empty value is a value, not NULL
                (2, "s", first, "", "U"),
                (1, "bin", second, None, "DA"),
                (1, "bi", second, "1", "U"),
            ],
            key=repr,
        )
        == sorted(records(lake, "r"), key=repr)
    )
    assert base64.b64decode("yv4=") == bytes.fromhex("CAFE")


def test_nested_values_of_a_dynamic_table_as_json(lake: LakeSession) -> None:
    """ARRAY and MAP columns (a table's own columns cannot be nested; a dynamic table's can):
    JSON text; a changed map is a U, an unchanged one no record. ROW_NUMBER makes every refresh
    a full one, which rewrites every row: the images are paired by key and compared."""
    lake.sql(
        "CREATE TABLE base (k INT, a INT, PRIMARY KEY (k)); "
        "ALTER TABLE base SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO base VALUES (1, 5), (2, 6); "
        "CREATE DYNAMIC TABLE d AS SELECT k, array(a, a + 1) AS arr, map('a', a) AS m, "
        "array(map('z', CAST(a AS STRING))) AS nest, ROW_NUMBER() OVER (ORDER BY k) AS rn "
        "FROM base; ALTER DYNAMIC TABLE d SET PRIMARY KEY (k); "
        "UPDATE base SET a = 7 WHERE k = 1; REFRESH DYNAMIC TABLE d"
    )
    times = commit_times(lake, "d")
    created, refreshed = max(times) - 1, max(times)
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE d TO TABLE r")
    result = run(lake, ranged("e", 0, times[refreshed] + 1))
    assert (result["first_version"], result["last_version"]) == (created, refreshed)
    first, second = times[created], times[refreshed]
    assert sorted(records(lake, "r"), key=repr) == sorted(
        [
            (1, "arr", first, "[5,6]", "U"),
            (1, "m", first, '{"a":5}', "U"),
            (1, "nest", first, '[{"z":"5"}]', "U"),
            (1, "rn", first, "1", "U"),
            (2, "arr", first, "[6,7]", "U"),
            (2, "m", first, '{"a":6}', "U"),
            (2, "nest", first, '[{"z":"6"}]', "U"),
            (2, "rn", first, "2", "U"),
            (1, "arr", second, "[7,8]", "U"),
            (1, "m", second, '{"a":7}', "U"),
            (1, "nest", second, '[{"z":"7"}]', "U"),
        ],
        key=repr,
    )
    assert json.loads('[{"z":"7"}]') == [{"z": "7"}]


def test_a_source_of_key_columns_only_exports_its_deletes(lake: LakeSession) -> None:
    """No other column: an insert has no column versions, a delete is one DR."""
    lake.sql(
        "CREATE TABLE t (k INT, PRIMARY KEY (k)); "
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO t VALUES (1), (2); DELETE FROM t WHERE k = 1"
    )
    times = commit_times(lake, "t")
    deleted = max(times)
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    result = run(lake, ranged("e", 0, times[deleted] + 1))
    assert (result["records"], result["DR"]) == (1, 1)
    assert rows(lake, "SELECT * FROM r") == [(1, None, times[deleted], None, "DR")]


def test_a_key_column_named_as_a_record_column_is_refused_clearly(lake: LakeSession) -> None:
    """The records lead with the key's columns under their own names, then column_name,
    version, column_value and op_type: a key column of one of those names cannot be kept."""
    lake.sql(
        "CREATE TABLE t (version INT, a STRING, PRIMARY KEY (version)); "
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"
    )
    text = refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    assert "version" in text
    assert "changelog export e" in text
    assert "--debug" not in text  # not Spark's COLUMN_ALREADY_EXISTS passed through


def test_a_status_row_before_the_oldest_commit_kept_is_refused(lake: LakeSession) -> None:
    """Commit files before a checkpoint removed (as log retention does): an export that would
    resume before the oldest commit kept says so; one without a status row starts there."""
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL)")
    lake.sql("; ".join(f"INSERT INTO t VALUES ({k}, 'v{k}', NULL)" for k in range(2, 12)))
    times = commit_times(lake, "t")
    newest = max(times)
    assert newest >= 11
    lake.sql(
        "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r; "
        "CREATE CHANGELOG EXPORT fresh FROM TABLE t TO TABLE rf STATUS_TABLE = 'fresh_status'"
    )
    assert run(lake, ranged("e", 0, times[4]))["last_version"] == 3

    log = Path(lake.catalog.get(TableEntry, "t").location) / "_delta_log"
    assert sorted(p.name for p in log.glob("00000000000000000010.checkpoint*"))
    for version in range(10):
        for path in log.glob(f"{version:020d}.*"):
            path.unlink()
    assert rows(lake, "SELECT count(*) FROM t") == [(11,)]  # Delta reads it from the checkpoint

    assert refused(lake, ranged("e", times[4], times[newest] + 1)) == (
        "table t's history before version 10 is no longer kept, and the export needs it from "
        "version 4 — export ranges after the oldest commit kept (DESC HISTORY shows it), or "
        "keep history longer (Delta's delta.logRetentionDuration)"
    )
    assert len(status(lake)) == 1
    started = run(lake, ranged("fresh", times[4], times[newest] + 1))
    assert (started["first_version"], started["versions_read"]) == (10, newest - 9)
    assert [row[2] for row in records(lake, "rf")] == [times[v] for v in range(10, newest + 1)]


def failing(spark: SparkSession, text: str, attempts: list[int]) -> Callable[[], None]:
    """A real Spark query that fails with `text`, counting its attempts."""

    def action() -> None:
        attempts.append(1)
        spark.sql(f"SELECT raise_error('{text}')").collect()

    return action


def test_transient_failures_are_retried_max_retries_times(spark: SparkSession) -> None:
    export = ExportEntry("e", source="t", max_retries=2)
    attempts: list[int] = []
    with pytest.raises(PySparkException) as caught:
        _retrying(export, failing(spark, "java.io.IOException: storage did not answer", attempts))
    assert "storage did not answer" in str(caught.value)
    assert len(attempts) == 3  # the first try and MAX_RETRIES = 2 more

    attempts.clear()
    with pytest.raises(PySparkException):
        _retrying(export, failing(spark, "not a transient failure", attempts))
    assert len(attempts) == 1

    attempts.clear()
    calls = iter([failing(spark, "IOException: once", attempts), lambda: None])
    assert _retrying(export, lambda: next(calls)()) is None
    assert len(attempts) == 1


def test_a_transient_failure_of_a_write_is_retried(spark: SparkSession, tmp_path: Path) -> None:
    """A failure inside a write's tasks reaches Python as py4j's Py4JJavaError (Spark's
    TASK_WRITE_FAILED), not as a PySparkException: it is a transient failure all the same."""
    export = ExportEntry("e", source="t", max_retries=2)
    attempts: list[int] = []

    def write() -> None:
        attempts.append(1)
        spark.sql(
            "SELECT 1 AS a, CAST(raise_error('java.io.IOException: storage did not answer') "
            "AS INT) AS b"
        ).write.format("delta").mode("append").save(str(tmp_path / "target"))

    with pytest.raises(Exception, match=r"storage did not answer|TASK_WRITE_FAILED"):
        _retrying(export, write)
    assert len(attempts) == 3
