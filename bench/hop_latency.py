"""Hop latency: file landed → its dynamic table refreshed, through what `make dev` runs.

    .venv/bin/python bench/hop_latency.py [--files 24] [--interval 5] [--no-connect]

As bench/pipe_latency.py (a Spark Connect server unless --no-connect, `lake code-server` and
`dagster-daemon run` in a temporary DAGSTER_HOME and LAKE_HOME, a LIST_PURGE pipe polling every
5 s as the walkthrough's, one small CSV file every --interval seconds ±20 %), with a dynamic table
that aggregates the pipe's table as the walkthrough's summary does. Per file: written → the
load's commit, and load commit → the dynamic table's commit that reflects it (the first refresh
whose record read the table at the load's version or later); every end is a commit file's mtime,
so no Spark is needed to watch. Prints p50 and p95 of the whole hop (goal: p50 ≤ 6 s) and of
load commit → refresh commit, where the time goes (from the runs' events), and the refreshes
asked for besides the pipe's runs (the goal: none)."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dagster import DagsterInstance, RunsFilter
from harness import Bench, RunTimes, file_bench, percentile, print_parts, run_times
from pipe_latency import CommitWatcher, write_file

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import decode
from lake_assets.dynamic_tables.defs import TRIGGER_TAG
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESH_MARKER, REFRESHES
from lake_assets.tables.entry import TableEntry

GOAL_P50, AIM_P50 = 6.0, 3.0
TABLE, SUMMARY, JOB = "bench_t", "bench_summary", "ingest_bench_t_job"
LOAD_STEP = f"ingest_{TABLE}.load_{TABLE}"
SETUP = f"""
CREATE STORAGE CONNECTION bench_conn TYPE LOCAL;
CREATE EXTERNAL VOLUME bench_vol LOCATION '{{location}}' USING CONNECTION bench_conn
    DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE;
CREATE TABLE {TABLE} (id BIGINT, file STRING, line INT);
CREATE PIPE bench_pipe INGEST_MODE = 'LIST_PURGE' POLL_INTERVAL = {{poll}}
    AS COPY INTO {TABLE} FROM VOLUME bench_vol USING CSV PURGE = TRUE;
CREATE DYNAMIC TABLE {SUMMARY} AS SELECT line, COUNT(*) AS files, SUM(id) AS total,
    MIN(file) AS first_file, MAX(file) AS last_file FROM {TABLE} GROUP BY line;
"""


@dataclass(frozen=True)
class Refresh:
    """A refresh commit of the dynamic table: when, and the table's version it read."""

    committed: float
    read: int


def refreshes(location: str) -> list[Refresh]:
    """The dynamic table's refresh commits, oldest first, from its _delta_log."""
    log = Path(location.removeprefix("file:")) / "_delta_log"
    found = []
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            info = json.loads(line).get("commitInfo") or {}
            record = decode(info.get("userMetadata"), REFRESH_MARKER)
            if record is not None and TABLE in record["sources"]:
                found.append(Refresh(commit.stat().st_mtime, int(record["sources"][TABLE][1])))
    return found


@dataclass
class Hop:
    name: str
    url: str
    written: float
    loaded: float | None = None
    version: int | None = None
    refreshed: float | None = None


def settle(watcher: CommitWatcher, summary: str, hops: list[Hop], until: float) -> None:
    """Note each file's load and refresh commits until all are seen or `until`."""
    while True:
        watcher.scan()
        done = refreshes(summary)
        for hop in hops:
            if hop.loaded is None and hop.url in watcher.committed:
                hop.loaded, hop.version = watcher.committed[hop.url]
            if hop.refreshed is None and hop.version is not None:
                hop.refreshed = next((r.committed for r in done if r.read >= hop.version), None)
        if time.time() >= until or (hops and all(h.refreshed is not None for h in hops)):
            return
        time.sleep(0.2)


def _run_of(runs: list[RunTimes], hop: Hop) -> RunTimes | None:
    return next(
        (
            r
            for r in runs
            if r.started and r.ended and hop.loaded and r.started <= hop.loaded <= r.ended
        ),
        None,
    )


def breakdown(instance: DagsterInstance, hops: list[Hop]) -> None:
    """Per file, from its pipe run's events: the sensor, the queue, the run's process and code,
    resources, the load, the step between, the refresh."""
    runs = run_times(instance, RunsFilter(job_name=JOB))
    parts: dict[str, list[float]] = {key: [] for key in LABELS}
    for hop in hops:
        run = _run_of(runs, hop)
        load = run.steps.get(LOAD_STEP) if run else None
        refresh = run.steps.get(SUMMARY) if run else None
        if (
            run is None
            or run.launched is None
            or run.started is None
            or load is None
            or refresh is None
            or hop.loaded is None
            or hop.refreshed is None
        ):
            continue
        parts["sensor"].append(max(0.0, run.created - hop.written))
        parts["queue"].append(run.launched - max(run.created, hop.written))
        parts["start"].append(run.started - run.launched)
        parts["setup"].append(load - run.started)
        parts["load"].append(hop.loaded - load)
        parts["between"].append(refresh - hop.loaded)
        parts["refresh"].append(hop.refreshed - refresh)
    print_parts(f"breakdown over {len(parts['sensor'])} files", LABELS, parts)
    print(f"  pipe runs: {len(runs)} for {len(hops)} files")


LABELS = {
    "sensor": "written → run requested (sensor loop, POLL_INTERVAL, settle)",
    "queue": "run requested → RUN_STARTING (queued run coordinator)",
    "start": "RUN_STARTING → RUN_START (run process start, code load)",
    "setup": "RUN_START → load STEP_START (resources, step start)",
    "load": "load STEP_START → load commit (session, list, read, commit)",
    "between": "load commit → refresh STEP_START (report, step start)",
    "refresh": "refresh STEP_START → refresh commit",
}


def extra_refreshes(instance: DagsterInstance, catalog: Catalog) -> None:
    """Refreshes other than the pipe runs': the automation's runs and what each refresh did."""
    automatic = [
        run
        for run in instance.get_runs(RunsFilter(tags={TRIGGER_TAG: "UPSTREAM"}))
        if run.job_name != JOB
    ]
    kinds = Counter(
        f"{r.refresh_trigger} {r.state} {r.refresh_mode or ''}".strip()
        for r in REFRESHES.newest_first(catalog, SUMMARY)
    )
    print(f"  automation runs refreshing {SUMMARY}: {len(automatic)} (goal: 0)")
    print(f"  {SUMMARY}'s refreshes: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))


def stats(label: str, values: list[float]) -> str:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return f"{label}: p50 {p50:.1f} s, p95 {p95:.1f} s, max {max(values):.1f} s"


def main() -> int:
    return file_bench(__doc__.split("\n")[0], "lake-hop-", measure)


def measure(bench: Bench, args: argparse.Namespace) -> int:
    lake, incoming = bench.pipe_objects(SETUP, args.poll)
    watcher = CommitWatcher(lake.catalog.get(TableEntry, TABLE).location)
    summary = lake.catalog.get(DynamicTableEntry, SUMMARY).location
    bench.start_daemon()
    warm = Hop("warm-up", write_file(incoming, 0, args.rows).as_uri(), time.time())
    settle(watcher, summary, [warm], time.time() + 600)
    if warm.refreshed is None:
        print(f"the warm-up file was not refreshed within 600 s; see {bench.root}/daemon.log")
        return 1
    print(f"warm-up file (daemon start included): {warm.refreshed - warm.written:.1f} s\n")

    rng = random.Random(3)
    hops: list[Hop] = []
    for number in range(1, args.files + 1):
        path = write_file(incoming, number, args.rows)
        hops.append(Hop(path.name, path.as_uri(), path.stat().st_mtime))
        settle(watcher, summary, [], time.time() + args.interval * rng.uniform(0.8, 1.2))
    settle(watcher, summary, hops, time.time() + 300)
    instance = bench.quiesce()

    for hop in hops:
        load = f"{hop.loaded - hop.written:5.1f} s" if hop.loaded else " lost"
        whole = f"{hop.refreshed - hop.written:5.1f} s" if hop.refreshed else " lost"
        print(f"{hop.name}  loaded {load}  refreshed {whole}  (version {hop.version})")
    done = [h for h in hops if h.loaded and h.refreshed]
    if not done:
        print("no file was loaded and refreshed")
        return 1
    whole = [h.refreshed - h.written for h in done if h.refreshed]
    apart = [h.refreshed - h.loaded for h in done if h.refreshed and h.loaded]
    loads = [h.loaded - h.written for h in done if h.loaded]
    p50 = percentile(whole, 0.5)
    print(f"\n{len(done)}/{len(hops)} files loaded and refreshed")
    print(stats("file written → dynamic table committed", whole))
    print(stats("file written → load committed        ", loads))
    print(stats("load committed → dynamic table committed", apart))
    print(
        f"goal: p50 ≤ {GOAL_P50:.0f} s (the aim: {AIM_P50:.0f} s): "
        f"{'met' if p50 <= GOAL_P50 else 'NOT met'}"
    )
    breakdown(instance, done)
    extra_refreshes(instance, lake.catalog)
    print(f"load average (1/5/15 min) at the end: {os.getloadavg()}, {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
