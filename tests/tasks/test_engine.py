"""Tasks through the SQL surface, on real Spark and Delta: CREATE / SHOW / DESC / ALTER / DROP,
EXECUTE TASK consuming a stream (SUCCEED, SKIPPED without Spark, FAILED and the retry of the
same versions), a second run while one is under way, and a dead run settled by the next."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from pyspark.sql import SparkSession

from lake_assets.session import LakeSession
from lake_assets.streams.entry import StreamEntry
from lake_assets.tasks.entry import RunClaim, TaskEntry, TaskTrigger
from lake_assets.tasks.run_history import RUNS, TaskRunRecord
from lake_assets.tasks.runs import run_task
from tests.ingest_helpers import local_volume, refused
from tests.streams.stream_helpers import message, rows

# Append-only streams turn on the change data feed alone (row tracking costs each commit ~0.75 s).
SOURCE = (
    "CREATE TABLE t (id INT, name VARCHAR, age INT); CREATE TABLE STREAM s ON TABLE t "
    "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')"
)
TARGET = "CREATE TABLE tgt (id INT, name VARCHAR, age INT)"
CONSUMER = (
    "CREATE TASK k WHEN STREAM_HAS_DATA('s') COMMENT 'copies t' AS "
    "INSERT INTO tgt SELECT id, name, age FROM s"
)


def properties(lake: LakeSession, sql: str) -> dict[str, Any]:
    return dict(rows(lake, sql))


def offset(lake: LakeSession, stream: str = "s") -> int:
    return lake.catalog.get(StreamEntry, stream).offset


def latest(lake: LakeSession, table: str) -> int:
    return max(version for version, *_ in rows(lake, f"DESC HISTORY {table}"))


def history(lake: LakeSession, name: str = "k") -> list[TaskRunRecord]:
    return RUNS.newest_first(lake.catalog, name)


def executed(lake: LakeSession, name: str = "k") -> dict[str, Any]:
    """EXECUTE TASK's one row, by column."""
    (result,) = lake.sql(f"EXECUTE TASK {name}")
    (row,) = result.rows
    return dict(zip(result.columns, row, strict=True))


def _no_spark() -> SparkSession:
    raise AssertionError("Spark was started")


@pytest.fixture
def sparkless(lake: LakeSession) -> LakeSession:
    """The same lakehouse through a session that fails the test if anything starts Spark."""
    return LakeSession(lake.catalog, lake.settings, _no_spark)


@pytest.fixture
def other_process() -> Iterator[str]:
    """A live process that is not this one, as a claim names its owner."""
    sleeper = subprocess.Popen(["sleep", "600"])
    started = psutil.Process(sleeper.pid).create_time()
    yield f"{socket.gethostname()}:{sleeper.pid}:{started:.3f}"
    sleeper.kill()
    sleeper.wait()


def test_create_show_desc_alter_and_drop(lake: LakeSession, sparkless: LakeSession) -> None:
    lake.sql(f"{SOURCE}; {TARGET}")
    assert message(lake, CONSUMER) == ("created task k; it runs when STREAM_HAS_DATA('s')")
    assert (
        message(
            sparkless,
            "CREATE TASK nightly SCHEDULE = 'USING CRON 0 2 * * * Europe/Paris' "
            "AS DELETE FROM tgt WHERE age < 0",
        )
        == "created task nightly; it runs on SCHEDULE 'USING CRON 0 2 * * * Europe/Paris'"
    )
    assert message(sparkless, "CREATE TASK by_hand AS DELETE FROM tgt") == (
        "created task by_hand; it runs only by EXECUTE TASK: it has neither SCHEDULE nor WHEN"
    )
    assert message(sparkless, f"CREATE TASK IF NOT EXISTS {CONSUMER[12:]}") == (
        "task k already exists; nothing to do"
    )
    assert refused(sparkless, CONSUMER) == (
        "task k already exists — use CREATE TASK IF NOT EXISTS, pick another name, or DROP it first"
    )

    (shown,) = sparkless.sql("SHOW TASKS")
    assert shown.columns == [
        "name", "state", "schedule", "when", "definition", "comment", "created_at",
        "last_run_state", "last_run_time",
    ]  # fmt: skip
    assert [row[:6] + row[7:] for row in shown.rows] == [
        ("by_hand", "STARTED", None, None, "DELETE FROM tgt", None, None, None),
        (
            "k", "STARTED", None, "STREAM_HAS_DATA('s')",
            "INSERT INTO tgt SELECT id, name, age FROM s", "copies t", None, None,
        ),
        (
            "nightly", "STARTED", "USING CRON 0 2 * * * Europe/Paris", None,
            "DELETE FROM tgt WHERE age < 0", None, None, None,
        ),
    ]  # fmt: skip
    described = properties(sparkless, "DESC TASK k")
    assert {key: described[key] for key in ("state", "when", "when_has_data", "streams")} == {
        "state": "STARTED",
        "when": "STREAM_HAS_DATA('s')",
        "when_has_data": False,
        "streams": "s",
    }
    assert (described["target"], described["comment"], described["running_process"]) == (
        "tgt",
        "copies t",
        None,
    )
    nightly = properties(sparkless, "DESC TASK nightly")
    assert (nightly["schedule"], nightly["cron"]) == (
        "USING CRON 0 2 * * * Europe/Paris",
        "0 2 * * * Europe/Paris",
    )

    assert message(sparkless, "ALTER TASK k SUSPEND") == "task k is SUSPENDED"
    assert properties(sparkless, "DESC TASK k")["state"] == "SUSPENDED"
    assert message(sparkless, "ALTER TASK k RESUME") == "task k is STARTED"

    # Nor is the table the tasks write.
    assert refused(sparkless, "DROP TABLE tgt") == (
        "table tgt is used by task by_hand — drop task by_hand first"
    )

    # A stream is not dropped under a task that reads it; the task goes first.
    assert refused(sparkless, "DROP STREAM s") == ("stream s is used by task k — drop task k first")
    assert message(sparkless, "DROP TASK k") == "dropped task k"
    assert message(sparkless, "DROP TASK IF EXISTS k") == "task k does not exist; nothing to do"
    assert refused(sparkless, "DESC TASK k") == (
        "task k does not exist — check the name with SHOW TASKS or create it with CREATE TASK"
    )
    assert refused(sparkless, "EXECUTE TASK k").startswith("task k does not exist")
    assert refused(sparkless, "SHOW TASK HISTORY WHERE name = 'k'").startswith(
        "task k does not exist"
    )
    assert [row[0] for row in rows(sparkless, "SHOW TASKS")] == ["by_hand", "nightly"]


def test_create_refuses_what_the_catalog_does_not_have(
    lake: LakeSession, sparkless: LakeSession
) -> None:
    lake.sql(f"{SOURCE}; {TARGET}")
    assert refused(sparkless, "CREATE TASK x AS INSERT INTO nowhere SELECT * FROM s") == (
        "table nowhere does not exist — check the name with SHOW TABLES or create it with "
        "CREATE TABLE"
    )
    assert refused(sparkless, "CREATE TASK x AS INSERT INTO tgt SELECT * FROM nothing").startswith(
        "table nothing does not exist"
    )
    assert refused(sparkless, "CREATE TASK x AS INSERT INTO s SELECT * FROM t").startswith(
        "s is a stream: it shows another table's changes and cannot be written"
    )
    assert refused(
        sparkless, "CREATE TASK x WHEN STREAM_HAS_DATA('t') AS INSERT INTO tgt SELECT * FROM t"
    ) == (
        "task x waits for data on t, which is not a stream — name a stream in STREAM_HAS_DATA "
        "(see SHOW STREAMS)"
    )
    assert refused(
        sparkless,
        "CREATE TASK x AS COPY INTO VOLUME v FROM (SELECT * FROM s) FILE_FORMAT = (TYPE = CSV)",
    ).startswith("volume v does not exist")
    assert rows(sparkless, "SHOW TASKS") == []


def test_execute_task_consumes_the_stream_once_and_records_each_run(
    lake: LakeSession, sparkless: LakeSession
) -> None:
    lake.sql(f"{SOURCE}; {TARGET}; {CONSUMER}")
    start = offset(lake)

    # No data: SKIPPED from the Delta log alone, and nothing moves.
    skipped = executed(sparkless)
    assert (skipped["state"], skipped["trigger"], skipped["streams"]) == ("SKIPPED", "MANUAL", "{}")
    assert skipped["reason"] == "no data: STREAM_HAS_DATA('s')"
    assert offset(lake) == start

    lake.sql("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2); INSERT INTO t VALUES (3, 'c', 3)")
    assert properties(sparkless, "DESC TASK k")["when_has_data"] is True
    end = latest(lake, "t")
    ran = executed(lake)
    assert (ran["state"], ran["rows_written"], ran["streams"]) == (
        "SUCCEED",
        3,
        f'{{"s": [{start}, {end}]}}',
    )
    assert ran["error_message"] is None
    assert rows(lake, "SELECT * FROM tgt") == rows(lake, "SELECT * FROM t")
    assert offset(lake) == end
    assert executed(sparkless)["state"] == "SKIPPED"

    (shown,) = sparkless.sql("SHOW TASK HISTORY WHERE name = 'k'")
    assert [(row[1], row[2], row[6], row[7]) for row in shown.rows] == [
        ("SKIPPED", "MANUAL", None, "{}"),
        ("SUCCEED", "MANUAL", 3, f'{{"s": [{start}, {end}]}}'),
        ("SKIPPED", "MANUAL", None, "{}"),
    ]
    last = rows(sparkless, "SHOW TASKS")[0]
    assert (last[7], last[8]) == ("SKIPPED", history(lake)[0].start_time)


def test_rows_written_count_rows_inserted_updated_and_deleted(lake: LakeSession) -> None:
    lake.sql(
        f"{TARGET}; INSERT INTO tgt VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);"
        "CREATE TASK upsert AS MERGE INTO tgt USING (SELECT 1 AS id UNION ALL SELECT 4) src "
        "ON tgt.id = src.id WHEN MATCHED THEN UPDATE SET age = 0 "
        "WHEN NOT MATCHED THEN INSERT (id, name, age) VALUES (src.id, 'new', 0);"
        "CREATE TASK purge AS DELETE FROM tgt WHERE age = 0"
    )
    assert executed(lake, "upsert")["rows_written"] == 2
    assert executed(lake, "purge")["rows_written"] == 2
    assert rows(lake, "SELECT * FROM tgt") == [(2, "b", 2), (3, "c", 3)]
    assert executed(lake, "purge")["rows_written"] == 0


def test_a_suspended_task_runs_only_by_hand(lake: LakeSession, sparkless: LakeSession) -> None:
    lake.sql(f"{SOURCE}; {TARGET}; {CONSUMER}; ALTER TASK k SUSPEND")
    lake.sql("INSERT INTO t VALUES (1, 'a', 1)")
    for trigger in (TaskTrigger.STREAM, TaskTrigger.SCHEDULED):
        record = run_task(sparkless, "k", trigger)
        assert (record.state, record.trigger, record.reason) == (
            "SKIPPED",
            trigger,
            "it is suspended",
        )
    assert rows(lake, "SELECT * FROM tgt") == []
    assert executed(lake)["state"] == "SUCCEED"
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]


def test_a_failed_run_moves_no_offset_and_the_next_retries_the_same_versions(
    lake: LakeSession,
) -> None:
    lookup = "CREATE TABLE hidden (id INT)"
    lake.sql(
        f"{SOURCE}; {TARGET}; {lookup}; CREATE TASK k WHEN STREAM_HAS_DATA('s') AS "
        "INSERT INTO tgt SELECT id, name, age FROM s WHERE id NOT IN (SELECT id FROM hidden);"
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)"
    )
    start, end = offset(lake), latest(lake, "t")

    # A table the task reads is gone (its target cannot be dropped): the run fails with the
    # catalog's error, and EXECUTE TASK raises it.
    lake.sql("DROP TABLE hidden")
    assert refused(lake, "EXECUTE TASK k") == (
        "task k failed: table hidden does not exist — check the name with SHOW TABLES or create "
        "it with CREATE TABLE"
    )
    failed = history(lake)[0]
    assert (failed.state, failed.trigger, failed.rows_written) == ("FAILED", "MANUAL", None)
    assert failed.error_message == (
        "table hidden does not exist — check the name with SHOW TABLES or create it with "
        "CREATE TABLE"
    )
    assert offset(lake) == start
    assert lake.catalog.get(TaskEntry, "k").run is None

    # Fixed, the next run consumes exactly the versions the failed one did not.
    lake.sql(lookup)
    ran = executed(lake)
    assert (ran["state"], ran["streams"], ran["rows_written"]) == (
        "SUCCEED",
        f'{{"s": [{start}, {end}]}}',
        2,
    )
    assert rows(lake, "SELECT * FROM tgt") == rows(lake, "SELECT * FROM t")


def test_a_run_time_spark_error_is_a_failed_run_with_one_line(lake: LakeSession) -> None:
    lake.sql(
        f"{SOURCE}; CREATE TABLE numbers (id INT, n INT);"
        "CREATE TASK k WHEN STREAM_HAS_DATA('s') AS "
        "INSERT INTO numbers SELECT id, CAST(name AS INT) FROM s;"
        "INSERT INTO t VALUES (1, 'one', 1)"
    )
    start = offset(lake)
    error = refused(lake, "EXECUTE TASK k")
    assert error.startswith("task k failed: ")
    assert "CAST_INVALID_INPUT" in error or "'one'" in error
    failed = history(lake)[0]
    assert failed.state == "FAILED"
    assert failed.streams == {"s": [start, start]}
    assert failed.error_message is not None
    assert error.removeprefix("task k failed: ") == failed.error_message
    assert offset(lake) == start
    assert rows(lake, "SELECT * FROM numbers") == []

    # Fixed, the task consumes the same versions.
    lake.sql(
        "DROP TASK k; CREATE TASK k WHEN STREAM_HAS_DATA('s') AS "
        "INSERT INTO numbers SELECT id, TRY_CAST(name AS INT) FROM s"
    )
    ran = executed(lake)
    assert (ran["state"], ran["streams"]) == ("SUCCEED", f'{{"s": [{start}, {latest(lake, "t")}]}}')
    assert rows(lake, "SELECT * FROM numbers") == [(1, None)]


def test_a_run_while_another_is_under_way_is_skipped_and_a_dead_one_is_settled(
    lake: LakeSession, sparkless: LakeSession, other_process: str
) -> None:
    lake.sql(
        f"{SOURCE}; {TARGET}; {CONSUMER}; INSERT INTO t VALUES (1, 'a', 1);"
        "CREATE TASK purge AS DELETE FROM tgt WHERE age < 0"
    )
    start = offset(lake)
    held = RunClaim("held", other_process, TaskTrigger.STREAM, "2026-01-01T00:00:00.000+00:00")
    lake.catalog.update(TaskEntry, "k", lambda entry: replace(entry, run=held))
    # A run of a task that reads no stream, caught in its statement.
    purging = RunClaim("purging", other_process, TaskTrigger.MANUAL, held.start_time, {})
    lake.catalog.update(TaskEntry, "purge", lambda entry: replace(entry, run=purging))

    skipped = executed(sparkless)
    assert skipped["state"] == "SKIPPED"
    assert skipped["reason"] == f"another run of the task is under way (process {other_process})"
    assert offset(lake) == start
    (shown,) = sparkless.sql("SHOW TASK HISTORY")
    first = shown.rows[0]
    assert (first[0], first[1], first[2], first[3]) == ("k", "EXECUTING", "STREAM", held.start_time)
    assert properties(sparkless, "DESC TASK k")["running_process"] == other_process
    assert lake.catalog.get(TaskEntry, "k").run == held

    # Its process dies: the next run records it FAILED, then runs.
    pid = int(other_process.split(":")[1])
    psutil.Process(pid).kill()
    psutil.Process(pid).wait()
    ran = executed(lake)
    assert (ran["state"], ran["rows_written"]) == ("SUCCEED", 1)
    dead = next(record for record in history(lake) if record.id == "held")
    assert (dead.state, dead.trigger, dead.start_time) == ("FAILED", "STREAM", held.start_time)
    assert dead.error_message == f"its process ({other_process}) died before its statement started"
    assert lake.catalog.get(TaskEntry, "k").run is None
    assert executed(lake, "purge")["state"] == "SUCCEED"
    (purged,) = [record for record in history(lake, "purge") if record.id == "purging"]
    assert purged.error_message == (
        f"its process ({other_process}) died while its statement ran: DESC HISTORY tgt shows "
        "whether it committed"
    )


def test_a_task_exports_a_stream_to_a_volume(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "exports")
    lake.sql(
        f"{SOURCE}; CREATE TASK export WHEN STREAM_HAS_DATA('s') AS COPY INTO VOLUME v "
        "SUBDIRECTORY 'out/' FROM (SELECT id, name, age FROM s) FILE_FORMAT = (TYPE = CSV);"
        "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)"
    )
    start, end = offset(lake), latest(lake, "t")
    ran = executed(lake, "export")
    assert (ran["state"], ran["streams"], ran["rows_written"]) == (
        "SUCCEED",
        f'{{"s": [{start}, {end}]}}',
        None,
    )
    (exported,) = (volume / "out").glob("*.csv")
    assert sorted(exported.read_text().splitlines()) == ["1,a,1", "2,b,2"]
    assert executed(lake, "export")["state"] == "SKIPPED"
    assert (
        refused(lake, "DROP VOLUME v") == "volume v is used by task export — drop task export first"
    )
