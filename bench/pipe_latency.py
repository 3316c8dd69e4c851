"""Pipe latency: file written → rows queryable, through what `make dev` runs.

    .venv/bin/python bench/pipe_latency.py [--files 24] [--interval 5] [--no-connect]

Starts a Spark Connect server (unless --no-connect: then every run starts its own JVM) and
`lake code-server` and `dagster-daemon run` on its workspace, in a temporary DAGSTER_HOME (a copy of
dagster_home/dagster.yaml) and LAKE_HOME. Creates a table, a volume and a LIST_PURGE pipe first
(the code location reads them when the daemon loads it), loads one warm-up file, then writes one
small CSV file every --interval seconds (±20 %). A file's latency ends when the Delta commit that
carries its load record appears in the table's _delta_log (the commit file's mtime): no Spark is
needed to watch. Prints each latency, p50 and p95 against the goal (p50 ≤ 15 s, p95 ≤ 30 s) and
a breakdown from the Dagster instance's run records and event logs."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dagster import DagsterInstance, RunsFilter
from harness import Bench, file_bench, percentile, print_parts, run_times

from lake_assets.tables.entry import TableEntry

GOAL_P50, GOAL_P95 = 15.0, 30.0
SETUP = """
CREATE STORAGE CONNECTION bench_conn TYPE LOCAL;
CREATE EXTERNAL VOLUME bench_vol LOCATION '{location}' USING CONNECTION bench_conn
    DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE;
CREATE TABLE bench_t (id BIGINT, file STRING, line INT);
CREATE PIPE bench_pipe INGEST_MODE = 'LIST_PURGE' POLL_INTERVAL = {poll}
    AS COPY INTO bench_t FROM VOLUME bench_vol USING CSV PURGE = TRUE;
"""


@dataclass
class Sample:
    name: str
    url: str
    written: float
    committed: float | None = None
    version: int | None = None


class CommitWatcher:
    """Reads new _delta_log commits and notes when each file's load record was committed."""

    def __init__(self, table_location: str) -> None:
        self.log = Path(table_location.removeprefix("file:")) / "_delta_log"
        self.seen: set[str] = set()
        self.committed: dict[str, tuple[float, int]] = {}

    def scan(self) -> None:
        for commit in sorted(self.log.glob("*.json")):
            if commit.name in self.seen:
                continue
            self.seen.add(commit.name)
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                metadata = (info or {}).get("userMetadata") or ""
                if metadata.startswith('{"lake_load"'):
                    for url, *_ in json.loads(metadata)["files"]:
                        self.committed[url] = (commit.stat().st_mtime, int(commit.stem))


def write_file(folder: Path, number: int, rows: int) -> Path:
    """Write under a hidden name, then rename: the pipe sees the file whole or not at all."""
    name = f"f{number:04d}.csv"
    hidden = folder / f".{name}"
    hidden.write_text("".join(f"{number * 1000 + i},{name},{i}\n" for i in range(rows)))
    return hidden.rename(folder / name)


def wait_for(watcher: CommitWatcher, samples: list[Sample], until: float) -> None:
    while True:
        watcher.scan()
        for sample in samples:
            if sample.committed is None and sample.url in watcher.committed:
                sample.committed, sample.version = watcher.committed[sample.url]
        if time.time() >= until or (samples and all(s.committed is not None for s in samples)):
            return
        time.sleep(0.2)


def breakdown(instance: DagsterInstance, samples: list[Sample]) -> None:
    """Per file: sensor (written → run created), queue + process start + code load (→ RUN_START),
    run set-up (→ STEP_START), load (→ commit)."""
    runs = run_times(instance, RunsFilter(job_name="ingest_bench_t_job"))
    parts: dict[str, list[float]] = {"sensor": [], "start": [], "setup": [], "load": []}
    for sample in samples:
        committed = sample.committed
        run = next(
            (
                r
                for r in runs
                if r.started and r.ended and committed and r.started <= committed <= r.ended
            ),
            None,
        )
        if run is None or run.started is None or run.step is None or committed is None:
            continue
        parts["sensor"].append(max(0.0, run.created - sample.written))
        parts["start"].append(run.started - max(run.created, sample.written))
        parts["setup"].append(run.step - run.started)
        parts["load"].append(committed - run.step)
    labels = {
        "sensor": "written → run requested (sensor loop, POLL_INTERVAL, settle)",
        "start": "run requested → RUN_START (dequeue, process start, code load)",
        "setup": "RUN_START → STEP_START (resources, step start)",
        "load": "STEP_START → commit (Spark session, reconcile, read, commit)",
    }
    print_parts(f"breakdown over {len(parts['sensor'])} files", labels, parts)
    print(f"  runs: {len(runs)} for {len(samples)} files")


def main() -> int:
    return file_bench(__doc__.split("\n")[0], "lake-latency-", measure)


def measure(bench: Bench, args: argparse.Namespace) -> int:
    lake, incoming = bench.pipe_objects(SETUP, args.poll)
    watcher = CommitWatcher(lake.catalog.get(TableEntry, "bench_t").location)
    bench.start_daemon()
    warm = Sample("warm-up", write_file(incoming, 0, args.rows).as_uri(), time.time())
    wait_for(watcher, [warm], time.time() + 600)
    if warm.committed is None:
        print(f"the warm-up file was not loaded within 600 s; see {bench.root}/daemon.log")
        return 1
    print(f"warm-up file (daemon start included): {warm.committed - warm.written:.1f} s\n")

    rng = random.Random(3)
    samples: list[Sample] = []
    for number in range(1, args.files + 1):
        path = write_file(incoming, number, args.rows)
        samples.append(Sample(path.name, path.as_uri(), path.stat().st_mtime))
        wait_for(watcher, [], time.time() + args.interval * rng.uniform(0.8, 1.2))
    wait_for(watcher, samples, time.time() + 300)
    instance = bench.quiesce()

    done = [s for s in samples if s.committed is not None]
    for sample in samples:
        latency = f"{sample.committed - sample.written:6.1f} s" if sample.committed else "lost"
        print(f"{sample.name}  {latency}  (version {sample.version})")
    latencies = [s.committed - s.written for s in done]
    if not latencies:
        print("no file was loaded")
        return 1
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    print(
        f"\n{len(done)}/{len(samples)} files loaded; latency p50 {p50:.1f} s, p95 {p95:.1f} s, "
        f"max {max(latencies):.1f} s (goal: p50 ≤ {GOAL_P50:.0f} s, p95 ≤ {GOAL_P95:.0f} s: "
        f"{'met' if p50 <= GOAL_P50 and p95 <= GOAL_P95 else 'NOT met'})"
    )
    breakdown(instance, samples)
    print(f"load average (1/5/15 min) at the end: {os.getloadavg()}, {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
