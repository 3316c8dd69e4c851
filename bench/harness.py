"""What the latency benches share: a temporary DAGSTER_HOME and LAKE_HOME, a Spark Connect server
(or a JVM per run), our SQL session, the daemon on the project's code location as `make dev` runs
it, and how the figures are read (nearest-rank percentiles, Dagster's run events)."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.daemon import spawn_daemon
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource
from resources.spark_server import free_port, server_url, spawn_server, stop

ROOT = Path(__file__).resolve().parent.parent
ACTIVE = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@dataclass(frozen=True)
class RunTimes:
    """One Dagster run's milestones (epoch seconds): what a latency's breakdown is read from."""

    created: float
    started: float | None
    step: float | None
    ended: float | None
    # RUN_STARTING: the queue handed the run to the launcher, which starts its process.
    launched: float | None = None
    # Each step's STEP_START, by step key.
    steps: dict[str, float] = field(default_factory=dict)


def run_times(instance: DagsterInstance, runs: RunsFilter) -> list[RunTimes]:
    """Each run's creation, RUN_STARTING, RUN_START, first STEP_START (and each step's) and end,
    oldest first."""
    times = []
    for record in instance.get_run_records(runs):
        events: dict[DagsterEventType, float] = {}
        steps: dict[str, float] = {}
        for entry in instance.all_logs(record.dagster_run.run_id):
            if entry.dagster_event is not None:
                events.setdefault(entry.dagster_event.event_type, entry.timestamp)
                if entry.dagster_event.event_type == DagsterEventType.STEP_START and entry.step_key:
                    steps.setdefault(entry.step_key, entry.timestamp)
        times.append(
            RunTimes(
                record.create_timestamp.timestamp(),
                events.get(DagsterEventType.RUN_START),
                events.get(DagsterEventType.STEP_START),
                record.end_time,
                events.get(DagsterEventType.RUN_STARTING),
                steps,
            )
        )
    return sorted(times, key=lambda run: run.created)


def print_parts(title: str, labels: dict[str, str], parts: dict[str, list[float]]) -> None:
    """p50 and max of each part of the latency, one line each."""
    print(f"\n{title} (p50 / max, seconds):")
    for key, label in labels.items():
        if parts.get(key):
            values = parts[key]
            print(f"  {label:64s} {percentile(values, 0.5):6.1f} / {max(values):6.1f}")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@dataclass
class Bench:
    """A bench's temporary homes and the processes it started (stopped newest first)."""

    root: Path
    env: dict[str, str]
    processes: list[subprocess.Popen] = field(default_factory=list)

    def session(self) -> tuple[LakeSession, DeltaSparkResource]:
        """Our SQL on the bench's own Spark session (through the server, when there is one)."""
        settings = LakeSettings.from_env()
        spark = DeltaSparkResource.from_settings(settings, str(self.root / "console.log"))
        lake = LakeSession(
            Catalog(settings.catalog_location), settings, lambda: spark.spark_session
        )
        return lake, spark

    def pipe_objects(self, setup: str, poll: int) -> tuple[LakeSession, Path]:
        """The objects a file bench drops its files for (`setup`, formatted with the incoming
        folder's URI and the pipe's POLL_INTERVAL), created on the bench's own session, which
        then stops (a JVM of its own without a server): the daemon's runs do the rest."""
        incoming = self.root / "incoming"
        incoming.mkdir()
        lake, spark = self.session()
        lake.sql(setup.format(location=incoming.as_uri() + "/", poll=poll))
        spark.spark_session.stop()
        return lake, incoming

    def start_daemon(self) -> None:
        """`lake code-server` and `dagster-daemon run`, logging to daemon.log."""
        with (self.root / "daemon.log").open("wb") as log:
            daemon = spawn_daemon(self.env, log)
        self.processes += [daemon.code_server, daemon.process]

    def quiesce(self, timeout: float = 120) -> DagsterInstance:
        """The instance once no run is under way (a run reports after its commit)."""
        instance = DagsterInstance.get()
        deadline = time.time() + timeout
        while instance.get_runs(RunsFilter(statuses=ACTIVE)) and time.time() < deadline:
            time.sleep(0.5)
        return instance


@contextmanager
def bench_home(prefix: str, connect: bool, keep: bool) -> Iterator[Bench]:
    """Temporary homes (dagster.yaml copied from the project's), and a warm Spark Connect server
    unless `connect` is off; Ctrl-C or SIGTERM stops everything and removes the homes."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    dagster_home = root / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", dagster_home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "LAKE_HOME": str(root / "lake")}
    env.pop("LAKE_SPARK_REMOTE", None)
    os.environ.update(env)
    os.environ.pop("LAKE_SPARK_REMOTE", None)
    signal.signal(signal.SIGTERM, _interrupt)
    bench = Bench(root, env)
    print(f"working in {root} ({'Spark Connect server' if connect else 'per-run JVM'})")
    try:
        if connect:
            started = time.monotonic()
            port = free_port()
            with (root / "server.log").open("wb") as log:
                bench.processes.append(spawn_server(port, env, log))
            env["LAKE_SPARK_REMOTE"] = os.environ["LAKE_SPARK_REMOTE"] = server_url(port)
            print(f"Spark Connect server up in {time.monotonic() - started:.1f} s")
        yield bench
    finally:
        for process in reversed(bench.processes):
            stop(process)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def file_bench(
    description: str, prefix: str, measure: Callable[[Bench, argparse.Namespace], int]
) -> int:
    """The entry of a bench that drops files into a pipe's volume under the daemon: its options,
    its homes, and Ctrl-C."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between files")
    parser.add_argument("--rows", type=int, default=5, help="rows per file")
    parser.add_argument("--poll", type=int, default=5, help="the pipe's POLL_INTERVAL")
    parser.add_argument("--no-connect", action="store_true", help="every run starts its own JVM")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    try:
        with bench_home(prefix, not args.no_connect, args.keep) as bench:
            return measure(bench, args)
    except KeyboardInterrupt:
        return 130
