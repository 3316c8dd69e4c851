"""Crash safety of consuming a stream: a `lake sql` process running a consuming statement (DML
into a table, or COPY INTO VOLUME) is SIGKILLed just before and just after its commit (or its
file); the next statement settles its claim, so the target and the offset agree, and consuming
again loses nothing and applies nothing twice."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lake_assets.session import LakeSession
from lake_assets.streams.entry import StreamEntry
from lake_assets.streams.offsets import CONSUME_AFTER_COMMIT, CONSUME_BEFORE_COMMIT
from tests.ingest_helpers import files, local_volume

ROOT = Path(__file__).resolve().parents[2]
CONSUMERS = {
    # An append-only history copied by INSERT … SELECT.
    "insert": (
        "INSERT INTO t VALUES (3, 'c', 3), (4, 'd', 4); INSERT INTO t VALUES (5, 'e', 5)",
        "INSERT INTO tgt SELECT id, name, age FROM s",
    ),
    # Inserts, updates and deletes applied by the consumer MERGE (INSERT VALUES, no column list).
    "merge": (
        "INSERT INTO t VALUES (3, 'c', 3); UPDATE t SET age = age + 5 WHERE id IN (1, 3); "
        "DELETE FROM t WHERE id = 2",
        "MERGE INTO tgt target USING s source_stream ON target.id = source_stream.id "
        "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' THEN update set "
        "target.age = source_stream.age "
        "WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
        "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' THEN INSERT VALUES "
        "(source_stream.id, source_stream.name, source_stream.age)",
    ),
}


def rows(lake: LakeSession, table: str) -> Counter:
    (result,) = lake.sql(f"SELECT id, name, age FROM {table}")
    return Counter(tuple(row) for row in result.rows)


def latest(lake: LakeSession, table: str) -> int:
    (result,) = lake.sql(f"DESC HISTORY {table}")
    return max(row[0] for row in result.rows)


def desc(lake: LakeSession) -> dict[str, Any]:
    (result,) = lake.sql("DESC STREAM s")
    return dict(result.rows)


def killed_at(lake_home: Path, failpoint: str, sql: str) -> int:
    """Run `sql` with `lake sql` until the failpoint kills it; the dead process's pid."""
    env = {**os.environ, "LAKE_HOME": str(lake_home), "LAKE_FAILPOINT": failpoint}
    process = subprocess.Popen(
        [sys.executable, "-m", "lake_assets.cli", "sql", "-e", sql],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == -signal.SIGKILL, stderr[-3000:]
    return process.pid


@pytest.mark.parametrize("consumer", list(CONSUMERS))
@pytest.mark.parametrize("failpoint", [CONSUME_BEFORE_COMMIT, CONSUME_AFTER_COMMIT])
def test_a_consumer_killed_around_its_commit_loses_nothing_and_applies_nothing_twice(
    lake: LakeSession, failpoint: str, consumer: str
) -> None:
    changes, consume = CONSUMERS[consumer]
    lake.sql(
        "CREATE TABLE t (id INT, name VARCHAR, age INT); CREATE TABLE STREAM s ON TABLE t; "
        "CREATE TABLE tgt (id INT, name VARCHAR, age INT); "
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2); "
        "INSERT INTO tgt SELECT id, name, age FROM s"
    )
    offset, consumed = desc(lake)["offset_version"], rows(lake, "tgt")
    assert consumed == rows(lake, "t")
    lake.sql(changes)
    read, target_version = latest(lake, "t"), latest(lake, "tgt")

    pid = killed_at(lake.settings.lake_home, failpoint, consume)
    claim = lake.catalog.get(StreamEntry, "s").claim
    assert claim is not None
    assert claim.owner.split(":")[1] == str(pid)

    # The next statement settles the dead process's claim: the offset moved iff tgt committed.
    described = desc(lake)
    assert described["consumer"] is None
    if failpoint == CONSUME_BEFORE_COMMIT:
        assert (described["offset_version"], latest(lake, "tgt")) == (offset, target_version)
        assert rows(lake, "tgt") == consumed
    else:
        assert (described["offset_version"], latest(lake, "tgt")) == (read, target_version + 1)
        assert rows(lake, "tgt") == rows(lake, "t")

    lake.sql(consume)
    assert rows(lake, "tgt") == rows(lake, "t")
    described = desc(lake)
    assert (described["offset_version"], described["pending_commits"]) == (read, 0)


def exported_rows(volume: Path) -> Counter:
    """Every row of every CSV file a COPY INTO VOLUME wrote, counted."""
    return Counter(
        (int(id_), name, int(age))
        for path in volume.rglob("*.csv")
        for id_, name, age in csv.reader(path.open())
    )


@pytest.mark.parametrize("failpoint", [CONSUME_BEFORE_COMMIT, CONSUME_AFTER_COMMIT])
def test_a_volume_export_killed_around_its_write_exports_each_change_once(
    lake: LakeSession, tmp_path: Path, failpoint: str
) -> None:
    volume = local_volume(lake, tmp_path / "exports")
    export = (
        "COPY INTO VOLUME v SUBDIRECTORY 'out/' FROM (SELECT id, name, age FROM s) "
        "FILE_FORMAT = (TYPE = CSV)"
    )
    lake.sql(
        "CREATE TABLE t (id INT, name VARCHAR, age INT); CREATE TABLE STREAM s ON TABLE t; "
        f"INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2); {export}"
    )
    offset, exported = desc(lake)["offset_version"], files(volume)
    assert exported_rows(volume) == rows(lake, "t")
    lake.sql("INSERT INTO t VALUES (3, 'c', 3), (4, 'd', 4); INSERT INTO t VALUES (5, 'e', 5)")
    read = latest(lake, "t")

    pid = killed_at(lake.settings.lake_home, failpoint, export)
    claim = lake.catalog.get(StreamEntry, "s").claim
    assert claim is not None
    assert claim.owner.split(":")[1] == str(pid)

    # The next statement settles the dead process's claim: the offset moved iff its file is there.
    described = desc(lake)
    assert described["consumer"] is None
    if failpoint == CONSUME_BEFORE_COMMIT:
        assert (described["offset_version"], files(volume)) == (offset, exported)
    else:
        assert described["offset_version"] == read
        assert files(volume) == sorted([*exported, claim.path])
        assert exported_rows(volume) == rows(lake, "t")

    lake.sql(export)
    assert exported_rows(volume) == rows(lake, "t")
    described = desc(lake)
    assert (described["offset_version"], described["pending_commits"]) == (read, 0)
