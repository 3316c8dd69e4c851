"""Crash safety of a task run: `lake sql -e "EXECUTE TASK k"` is SIGKILLed just before and just
after its consuming commit; the next run settles the dead one (recorded FAILED, with what its
stream shows it consumed), and the target and the stream's offset agree: nothing lost, nothing
applied twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lake_assets.session import LakeSession
from lake_assets.streams.entry import StreamEntry
from lake_assets.streams.offsets import CONSUME_AFTER_COMMIT, CONSUME_BEFORE_COMMIT
from lake_assets.tasks.entry import TaskEntry, TaskTrigger
from lake_assets.tasks.run_history import RUNS
from lake_assets.tasks.runs import run_task
from tests.streams.test_kill import killed_at, latest

ROOT = Path(__file__).resolve().parents[2]


def rows(lake: LakeSession, table: str) -> Counter:
    (result,) = lake.sql(f"SELECT id, name FROM {table}")
    return Counter(tuple(row) for row in result.rows)


@pytest.mark.parametrize("failpoint", [CONSUME_BEFORE_COMMIT, CONSUME_AFTER_COMMIT])
def test_a_task_run_killed_around_its_commit_is_settled_by_the_next_run(
    lake: LakeSession, failpoint: str
) -> None:
    lake.sql(
        "CREATE TABLE t (id INT, name VARCHAR); CREATE TABLE STREAM s ON TABLE t "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY'); CREATE TABLE tgt (id INT, name "
        "VARCHAR); CREATE TASK k WHEN STREAM_HAS_DATA('s') AS INSERT INTO tgt SELECT id, name "
        "FROM s; INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO t VALUES (3, 'c')"
    )
    start, read = lake.catalog.get(StreamEntry, "s").offset, latest(lake, "t")

    pid = killed_at(lake.settings.lake_home, failpoint, "EXECUTE TASK k")
    dead = lake.catalog.get(TaskEntry, "k").run
    assert dead is not None
    assert dead.owner.split(":")[1] == str(pid)
    assert dead.offsets == {"s": start}
    assert RUNS.newest_first(lake.catalog, "k") == []

    record = run_task(lake, "k", TaskTrigger.MANUAL)
    killed = next(r for r in RUNS.newest_first(lake.catalog, "k") if r.id == dead.id)
    assert (killed.state, killed.trigger, killed.start_time) == (
        "FAILED",
        "MANUAL",
        dead.start_time,
    )
    if failpoint == CONSUME_BEFORE_COMMIT:
        assert killed.streams == {"s": [start, start]}
        assert killed.error_message == (
            f"its process ({dead.owner}) died before its write committed: it wrote nothing"
        )
        # The versions the killed run did not commit are this run's.
        assert (record.state, record.streams, record.rows_written) == (
            "SUCCEED",
            {"s": [start, read]},
            3,
        )
    else:
        assert killed.streams == {"s": [start, read]}
        assert killed.error_message == (
            f"its process ({dead.owner}) died after its write committed: the stream versions it "
            "consumed stay consumed"
        )
        assert (record.state, record.reason) == ("SKIPPED", "no data: STREAM_HAS_DATA('s')")

    assert rows(lake, "tgt") == rows(lake, "t")
    assert lake.catalog.get(StreamEntry, "s").offset == read
    assert lake.catalog.get(StreamEntry, "s").claim is None
    assert lake.catalog.get(TaskEntry, "k").run is None
