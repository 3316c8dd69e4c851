"""Two writers in separate processes append to one table by statements that read it: a statement
that lost its commit only to the other's append is run again, so both succeed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lake_assets.core.spark_errors import Failure, classify, retrying_lost_append_races
from lake_assets.session import LakeSession
from tests.warehouse.writer import start

TIMES = 3
STATEMENT = "INSERT INTO t SELECT max(id) + 1, '{writer}' FROM t"


def run_writers(home: Path, statement: str, env: dict[str, str], times: int = TIMES) -> None:
    """Start writers a and b, let them go together once both are warm, and wait for both."""
    writers = {name: start(home, name, statement, times, env) for name in ("a", "b")}
    while not all((home / f"{name}.ready").exists() for name in writers):
        for name, writer in writers.items():
            assert writer.poll() is None, (home / f"{name}.log").read_text()
        time.sleep(0.1)
    (home / "go").touch()
    for name, writer in writers.items():
        assert writer.wait() == 0, (home / f"{name}.log").read_text()


def writer_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("LAKE_WAREHOUSE", "LAKE_CATALOG_URL", "LAKE_SPARK_REMOTE", "LAKE_SPARK_CONF")
    }
    return {**env, "LAKE_HOME": str(home), **extra}


def test_insert_select_from_the_same_table_by_two_processes_at_once(
    lake: LakeSession, tmp_path: Path
) -> None:
    lake.sql("CREATE TABLE t (id BIGINT, writer STRING); INSERT INTO t VALUES (0, 'first')")

    run_writers(tmp_path, STATEMENT, writer_env(tmp_path))

    rows = lake.spark.sql(
        f"SELECT id, writer FROM delta.`{lake.catalog.relation('t').location}` ORDER BY id"
    ).collect()
    # Both succeeded, and every statement read the table as it was when it committed: one row
    # per statement, ids 0, 1, 2, … none twice.
    assert [row.id for row in rows] == list(range(2 * TIMES + 1))
    writers = [row.writer for row in rows[1:]]
    assert writers.count("a") == writers.count("b") == TIMES


def test_a_true_conflict_is_not_retried(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id BIGINT)")
    location = lake.catalog.relation("t").location
    attempts = []

    def conflicting() -> None:
        attempts.append(1)
        lake.spark.sql(f"SELECT raise_error('[DELTA_CONCURRENT_DELETE_READ] {location}')").collect()

    with pytest.raises(Exception, match="DELTA_CONCURRENT_DELETE_READ") as raised:
        retrying_lost_append_races(conflicting)
    assert Failure.LOST_APPEND_RACE not in classify(raised.value)
    assert len(attempts) == 1
