"""Re-run to a table or a volume, an export holds each record once; the next resumes after it."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq

from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.exports.export_helpers import (
    DAY,
    KEYED,
    commit_times,
    latest,
    message,
    millis,
    ranged,
    records,
    run,
    status,
)
from tests.ingest_helpers import files, local_volume


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
