"""COPY INTO VOLUME … FROM (SELECT … FROM a stream) consumes the stream as INSERT … SELECT does,
on real Spark, Delta and files: one file per COPY, named from its tag, and the offset moves with
that file and only with it; a dead writer's claim is settled by whether its file is there."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.session import LakeSession
from lake_assets.streams import offsets
from lake_assets.streams.entry import Claim, Landing, StreamEntry, StreamMode
from tests.ingest_helpers import files, local_volume
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, new_bucket

EXPORT = "COPY INTO VOLUME v SUBDIRECTORY 'out/' FROM (SELECT id, name, age FROM s{where}) "
CSV = "FILE_FORMAT = (TYPE = CSV)"
COPY = EXPORT.format(where="") + CSV
EXPORTED = re.compile(r"exported to volume v: (out/part-[0-9a-f]{32}\.csv)")


def setup(lake: LakeSession, directory: Path) -> Path:
    """Table t with stream s, two rows in it, and volume v on `directory`."""
    lake.sql(
        "CREATE TABLE t (id INT, name VARCHAR, age INT); CREATE TABLE STREAM s ON TABLE t; "
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)"
    )
    return local_volume(lake, directory)


def exported_rows(where: Path) -> Counter:
    """Every row of the CSV file `where`, or of every one under it, counted."""
    paths = [where] if where.is_file() else where.rglob("*.csv")
    return Counter(tuple(row) for path in paths for row in csv.reader(path.open()))


def as_csv(*rows: tuple[Any, ...]) -> Counter:
    return Counter(tuple(str(value) for value in row) for row in rows)


def desc(lake: LakeSession) -> dict[str, Any]:
    (result,) = lake.sql("DESC STREAM s")
    return dict(result.rows)


def latest(lake: LakeSession, table: str) -> int:
    (result,) = lake.sql(f"DESC HISTORY {table}")
    return max(row[0] for row in result.rows)


def changes(lake: LakeSession) -> list[tuple]:
    (result,) = lake.sql("SELECT id, name, age FROM s")
    return sorted(tuple(row) for row in result.rows)


def exported(lake: LakeSession, sql: str = COPY) -> str:
    """Run a consuming COPY; the one file it reports."""
    (result,) = lake.sql(sql)
    assert result.message is not None
    match = EXPORTED.fullmatch(result.message)
    assert match, result.message
    return match.group(1)


def test_a_copy_exports_the_stream_s_changes_once_and_moves_its_offset(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = setup(lake, tmp_path / "out")
    first = exported(lake)
    assert exported_rows(volume) == as_csv((1, "a", 1), (2, "b", 2))
    described = desc(lake)
    assert (described["offset_version"], described["pending_commits"]) == (latest(lake, "t"), 0)
    assert changes(lake) == []

    lake.sql("INSERT INTO t VALUES (3, 'c', 3); INSERT INTO t VALUES (4, 'd', 4)")
    second = exported(lake)
    assert files(volume) == sorted([first, second])
    assert exported_rows(volume / second) == as_csv((3, "c", 3), (4, "d", 4))
    assert exported_rows(volume) == as_csv(*((i, n, i) for i, n in enumerate("abcd", start=1)))
    assert changes(lake) == []

    # COPY FROM TABLE and a query without streams keep their numbered names and move nothing.
    lake.sql("INSERT INTO t VALUES (5, 'e', 5)")
    lake.sql(
        "COPY INTO VOLUME v SUBDIRECTORY 'out/' FROM TABLE t FILE_FORMAT = (TYPE = CSV); "
        "COPY INTO VOLUME v SUBDIRECTORY 'out/' FROM (SELECT * FROM t) FILE_FORMAT = (TYPE = CSV)"
    )
    assert files(volume) == sorted([first, second, "out/part00001.csv", "out/part00002.csv"])
    assert changes(lake) == [(5, "e", 5)]


def test_a_copy_that_writes_no_rows_still_consumes(lake: LakeSession, tmp_path: Path) -> None:
    volume = setup(lake, tmp_path / "out")
    path = exported(lake, EXPORT.format(where=" WHERE id > 100") + CSV)
    assert files(volume) == [path]
    assert exported_rows(volume) == Counter()
    described = desc(lake)
    assert (described["offset_version"], described["pending_commits"]) == (latest(lake, "t"), 0)
    assert changes(lake) == []


FAILING = {
    "an option Spark refuses": (COPY.replace("CSV)", "CSV, compression = 'nope')"), "nope"),
    "a cast that fails while writing": (
        EXPORT.format(where="").replace("age FROM", "CAST(name AS INT) FROM") + CSV,
        "[CAST_INVALID_INPUT]",
    ),
    "an option that splits the file": (
        COPY.replace("CSV)", "CSV, maxRecordsPerFile = 1)"),
        "a COPY that consumes streams would write 2 files to volume v, but it writes one — "
        "leave out the FILE_FORMAT option that splits the output (maxRecordsPerFile)",
    ),
}


@pytest.mark.parametrize("case", list(FAILING))
def test_a_failed_copy_moves_nothing_and_leaves_no_file(
    lake: LakeSession, tmp_path: Path, case: str
) -> None:
    volume = setup(lake, tmp_path / "out")
    before = (desc(lake), changes(lake))
    statement, expected = FAILING[case]
    with pytest.raises(LakeError) as caught:
        lake.sql(statement)
    assert expected in str(caught.value)
    assert (desc(lake), changes(lake)) == before
    assert before[0]["pending_commits"] == 1
    assert lake.catalog.get(StreamEntry, "s").claim is None
    assert files(volume) == []
    exported(lake)
    assert exported_rows(volume) == as_csv((1, "a", 1), (2, "b", 2))


def claim(lake: LakeSession, owner: str, path: str) -> None:
    """Write a claim on stream s as a COPY exporting `path` to volume v would."""
    home = str(lake.settings.lake_home)
    made = Claim("another-copy", "v", 0, latest(lake, "t"), owner, Landing.VOLUME, path, home)
    lake.catalog.update(StreamEntry, "s", lambda entry: replace(entry, claim=made))


def test_a_stream_another_statement_consumes_is_refused_and_no_file_written(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = setup(lake, tmp_path / "out")
    offset = desc(lake)["offset_version"]
    claim(lake, offsets.owner(), "out/part-another-copy.csv")
    with pytest.raises(LakeError) as caught:
        lake.sql(COPY)
    assert str(caught.value) == (
        f"stream s is being consumed by another statement (process {offsets.owner()}) — "
        "run this statement again when that one has finished; nothing was written"
    )
    assert files(volume) == []
    assert (desc(lake)["offset_version"], desc(lake)["consumer"]) == (offset, offsets.owner())


def dead_owner() -> str:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert not os.path.exists(f"/proc/{pid_max + 1}")
    return f"{socket.gethostname()}:{pid_max + 1}:0.000"


@pytest.mark.parametrize("landed", [False, True])
def test_a_dead_copy_s_claim_is_settled_by_whether_its_file_is_there(
    lake: LakeSession, tmp_path: Path, landed: bool
) -> None:
    volume = setup(lake, tmp_path / "out")
    offset, read = desc(lake)["offset_version"], latest(lake, "t")
    if landed:
        (volume / "out").mkdir()
        (volume / "out/part-another-copy.csv").write_text("1,a,1\n2,b,2\n")
    claim(lake, dead_owner(), "out/part-another-copy.csv")
    described = desc(lake)
    assert (described["offset_version"], described["consumer"]) == (
        (read if landed else offset),
        None,
    )
    assert changes(lake) == ([] if landed else [(1, "a", 1), (2, "b", 2)])


def test_a_copy_into_an_s3_volume_consumes_and_its_dead_claims_settle(
    lake: LakeSession, s3_endpoint: str
) -> None:
    s3, bucket = new_bucket(s3_endpoint)
    lake.sql(
        "CREATE TABLE t (id INT, name VARCHAR, age INT); CREATE TABLE STREAM s ON TABLE t; "
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2); "
        f"CREATE STORAGE CONNECTION my_s3 TYPE S3 ENDPOINT = '{s3_endpoint}' "
        f"ACCESS_ID = '{ACCESS_ID}' ACCESS_KEY = '{ACCESS_KEY}' REGION = '{REGION}'; "
        f"CREATE EXTERNAL VOLUME v LOCATION 's3://{bucket}/lake/' USING CONNECTION my_s3"
    )
    path = exported(lake)
    body = s3.get_object(Bucket=bucket, Key=f"lake/{path}")["Body"].read().decode()
    assert as_csv(*csv.reader(io.StringIO(body))) == as_csv((1, "a", 1), (2, "b", 2))
    assert changes(lake) == []

    # A dead COPY's claim: the secret-sealed connection opens with the claim's LAKE_HOME.
    lake.sql("INSERT INTO t VALUES (3, 'c', 3)")
    s3.put_object(Bucket=bucket, Key="lake/out/part-another-copy.csv", Body=b"3,c,3\n")
    claim(lake, dead_owner(), "out/part-another-copy.csv")
    assert (desc(lake)["offset_version"], changes(lake)) == (latest(lake, "t"), [])


def test_claims_round_trip_and_those_stored_before_volume_exports_load_as_a_table_s() -> None:
    stream = StreamEntry(
        "s",
        source="t",
        source_kind="table",
        source_location="/t",
        mode=StreamMode.STANDARD,
        show_initial_rows=False,
        offset=3,
    )
    exporting = Claim("tag", "v", 0, 5, "host:1:0.000", Landing.VOLUME, "out/part-tag.csv", "/h")
    spec = replace(stream, claim=exporting).to_spec()
    assert StreamEntry.from_spec("s", "", spec).claim == exporting
    old = json.loads(spec)
    old["claim"] = {"tag": "tag", "target": "/tgt", "after": 2, "end": 5, "owner": "host:1:0.000"}
    loaded = StreamEntry.from_spec("s", "", json.dumps(old))
    assert loaded.claim == Claim("tag", "/tgt", 2, 5, "host:1:0.000")
    assert loaded.claim.landing is Landing.TABLE
