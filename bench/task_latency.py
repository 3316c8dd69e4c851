"""Task latency: a commit on a stream's source → the task that consumes it committed, through what
`make dev` runs.

    .venv/bin/python bench/task_latency.py [--commits 24] [--interval 5] [--no-connect]

Starts a Spark Connect server (unless --no-connect: then every run starts its own JVM),
`lake code-server` and `dagster-daemon run` in a temporary DAGSTER_HOME and LAKE_HOME. Creates a
change-tracked table, a STANDARD stream on it and a task WHEN STREAM_HAS_DATA that inserts the
stream's rows into another table; one warm-up commit is consumed first. Then commits one INSERT
on the source every --interval seconds (±20 %), through our SQL on the bench's own Spark session.
A commit's latency ends at the Delta commit of the task run that consumed it (the run's stream
range, from SHOW TASK HISTORY, holds the source version); both ends are commit files' mtimes, so
no Spark is needed to watch. Prints each latency, p50 and p95 against the goal (p50 ≤ 15 s) and
where the time goes, from the Dagster instance's run events and the task's history."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dagster import DagsterInstance, RunsFilter
from harness import Bench, RunTimes, bench_home, percentile, print_parts, run_times

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import log_versions
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.defs import AUTOMATIC, TRIGGER_TAG
from lake_assets.tasks.run_history import RUNS, TaskRunRecord

GOAL_P50 = 15.0
TASK, STREAM = "bench_task", "bench_s"
SETUP = f"""
CREATE TABLE bench_src (id BIGINT, v STRING);
ALTER TABLE bench_src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM {STREAM} ON TABLE bench_src;
CREATE TABLE bench_dst (id BIGINT, v STRING, change STRING);
CREATE TASK {TASK} WHEN STREAM_HAS_DATA('{STREAM}')
AS INSERT INTO bench_dst SELECT id, v, __change_type FROM {STREAM};
"""


@dataclass(frozen=True)
class Commit:
    version: int
    time: float


def commits(location: str) -> list[Commit]:
    """A table's commits, oldest first, timed by their log files' mtimes."""
    log = Path(location.removeprefix("file:")) / "_delta_log"
    versions = sorted(log_versions(location) or [])
    return [Commit(v, (log / f"{v:020d}.json").stat().st_mtime) for v in versions]


def epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


@dataclass(frozen=True)
class Consumed:
    """A source commit, the task run that consumed it, and that run's commit on the target."""

    source: Commit
    run: TaskRunRecord
    committed: float

    @property
    def latency(self) -> float:
        return self.committed - self.source.time


def consumption(catalog: Catalog, source: Commit, target: list[Commit]) -> Consumed | None:
    """The successful run whose stream range holds the source's version, and its commit."""
    for run in RUNS.newest_first(catalog, TASK):
        before, after = run.streams.get(STREAM, (0, 0))
        if run.state != "SUCCEED" or not before < source.version <= after:
            continue
        start, end = epoch(run.start_time), epoch(run.end_time)
        landed = [c.time for c in target if start <= c.time <= end + 1]
        return Consumed(source, run, landed[0]) if landed else None
    return None


def wait_consumed(
    lake: LakeSession, sources: list[Commit], locations: tuple[str, str], timeout: float
) -> list[Consumed | None]:
    """Each source commit's consumption, waiting up to `timeout` for the last of them."""
    deadline = time.time() + timeout
    while True:
        target = commits(locations[1])
        found = [consumption(lake.catalog, source, target) for source in sources]
        if all(found) or time.time() > deadline:
            return found
        time.sleep(0.5)


def insert(lake: LakeSession, number: int, location: str) -> Commit:
    lake.sql(f"INSERT INTO bench_src VALUES ({number}, 'row {number}')")
    return commits(location)[-1]


def breakdown(instance: DagsterInstance, done: list[Consumed]) -> None:
    """Per source commit: the sensors (streams, then the tasks' automation), the run's start,
    its set-up, the claim and Spark session, and the statement to its commit."""
    runs = run_times(instance, RunsFilter(tags={TRIGGER_TAG: AUTOMATIC}))
    parts: dict[str, list[float]] = {k: [] for k in ("sensor", "start", "setup", "claim", "sql")}
    for item in done:
        started = epoch(item.run.start_time)
        run = next((r for r in runs if _holds(r, started)), None)
        if run is None or run.started is None or run.step is None:
            continue
        parts["sensor"].append(max(0.0, run.created - item.source.time))
        parts["start"].append(run.started - max(run.created, item.source.time))
        parts["setup"].append(run.step - run.started)
        parts["claim"].append(started - run.step)
        parts["sql"].append(item.committed - started)
    labels = {
        "sensor": "source commit → run requested (lake_streams + lake_tasks sensors)",
        "start": "run requested → RUN_START (dequeue, process start, code load)",
        "setup": "RUN_START → STEP_START (resources, step start)",
        "claim": "STEP_START → task run start (Spark session, the task's claim)",
        "sql": "task run start → target commit (pin, read, write, commit)",
    }
    print_parts(f"breakdown over {len(parts['sensor'])} commits", labels, parts)
    print(f"  runs: {len(runs)} for {len(done)} commits")


def _holds(run: RunTimes, moment: float) -> bool:
    return run.started is not None and run.ended is not None and run.started <= moment <= run.ended


def measure(bench: Bench, args: argparse.Namespace) -> int:
    lake, spark = bench.session()
    try:
        return _measure(bench, lake, args)
    finally:
        spark.spark_session.stop()  # its client's threads would keep the process alive


def _measure(bench: Bench, lake: LakeSession, args: argparse.Namespace) -> int:
    lake.sql(SETUP)
    locations = (
        lake.catalog.get(TableEntry, "bench_src").location,
        lake.catalog.get(TableEntry, "bench_dst").location,
    )
    bench.start_daemon()
    warm = insert(lake, 0, locations[0])
    first = wait_consumed(lake, [warm], locations, 600)[0]
    if first is None:
        print(f"the warm-up commit was not consumed within 600 s; see {bench.root}/daemon.log")
        return 1
    print(f"warm-up commit (daemon start included): {first.latency:.1f} s\n")

    rng = random.Random(3)
    sources = []
    for number in range(1, args.commits + 1):
        sources.append(insert(lake, number, locations[0]))
        time.sleep(max(0.0, args.interval * rng.uniform(0.8, 1.2)))
    found = wait_consumed(lake, sources, locations, 300)
    instance = bench.quiesce()

    done = [item for item in found if item is not None]
    for source, item in zip(sources, found, strict=True):
        latency = f"{item.latency:6.1f} s" if item else "not consumed"
        print(f"version {source.version:3d}  {latency}")
    if not done:
        print("no commit was consumed")
        return 1
    latencies = [item.latency for item in done]
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    runs = len({item.run.id for item in done})
    print(
        f"\n{len(done)}/{len(sources)} commits consumed in {runs} task runs; latency p50 "
        f"{p50:.1f} s, p95 {p95:.1f} s, max {max(latencies):.1f} s "
        f"(goal: p50 ≤ {GOAL_P50:.0f} s: {'met' if p50 <= GOAL_P50 else 'NOT met'})"
    )
    breakdown(instance, done)
    print(f"load average (1/5/15 min) at the end: {os.getloadavg()}, {os.cpu_count()} CPUs")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=24)
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between commits")
    parser.add_argument("--no-connect", action="store_true", help="every run starts its own JVM")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    try:
        with bench_home("lake-task-latency-", not args.no_connect, args.keep) as bench:
            return measure(bench, args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
