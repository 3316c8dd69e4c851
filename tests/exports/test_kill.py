"""Exactly once under SIGKILL: `lake sql -e "EXPORT CHANGELOG …"` dies at the failpoint
export-after-write, after the range's records are written and before its status row; the same
EXPORT run again holds each record once, in a table or in the range's one file of a volume, and
one status row for the range."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lake_assets.exports.run import EXPORT_AFTER_WRITE
from lake_assets.session import LakeSession
from tests.exports.export_helpers import KEYED, commit_times, message, ranged, records, run, status
from tests.ingest_helpers import files, local_volume
from tests.streams.test_kill import killed_at


def file_records(path: Path) -> list[tuple]:
    """The records of a range's Parquet file, as `records` orders a table's."""
    found = [
        (r["k"], r["column_name"], r["version"], r["column_value"], r["op_type"])
        for r in pq.read_table(path).to_pylist()
    ]
    return sorted(found, key=lambda record: (record[2], record[0], record[1] or ""))


@pytest.mark.parametrize("target", ["table", "volume"])
def test_an_export_killed_after_its_write_holds_each_record_once_when_run_again(
    lake: LakeSession, tmp_path: Path, target: str
) -> None:
    directory = local_volume(lake, tmp_path / "volume")
    lake.sql(
        f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL), (2, 'b', 'c'); "
        "UPDATE t SET a = 'z', b = NULL WHERE k = 2; DELETE FROM t WHERE k = 1; "
        "INSERT INTO t VALUES (1, NULL, 'd')"
    )
    times = commit_times(lake, "t")
    newest = max(times)
    updated, deleted, again = range(newest - 2, newest + 1)
    into = "TABLE r" if target == "table" else "VOLUME v"
    lake.sql(f"CREATE CHANGELOG EXPORT e FROM TABLE t TO {into}")
    # Range 1 (the INSERT) exported normally; range 2 (the rest) killed, then run again.
    run(lake, ranged("e", 0, times[updated]))
    start, end = times[updated], times[again] + 1
    export = ranged("e", start, end)
    expected = [
        (2, "a", times[updated], "z", "U"),
        (2, "b", times[updated], None, "DA"),
        (1, None, times[deleted], None, "DR"),
        (1, "b", times[again], "d", "U"),
    ]
    range_file = directory / f"range={start}-{end}" / "changelog.parquet"

    def written() -> list[tuple]:
        if target == "table":
            return [r for r in records(lake, "r") if r[2] >= start]
        return file_records(range_file)

    killed_at(lake.settings.lake_home, EXPORT_AFTER_WRITE, export)
    # Written, and not recorded: the status has range 1's row only.
    assert written() == expected
    assert [row[2:4] for row in status(lake)] == [(0, start)]

    result = run(lake, export)
    assert (result["records"], result["U"], result["DA"], result["DR"]) == (4, 2, 1, 1)
    # Resumed after range 1's last version, as if nothing had happened.
    assert result["versions_read"] == newest - updated + 1
    assert written() == expected
    assert [row[2:4] for row in status(lake)] == [(0, start), (start, end)]
    if target == "volume":
        assert files(directory) == [
            f"range=0-{start}/changelog.parquet",
            f"range={start}-{end}/changelog.parquet",
        ]
    else:
        assert len(records(lake, "r")) == 3 + 4
    assert message(lake, export).endswith(
        "is up to date (exported already, nothing committed since)"
    )
    assert len(status(lake)) == 2
