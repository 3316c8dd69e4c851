"""A Spark standalone cluster on 127.0.0.1 from the pyspark package: one master and one worker
(`lake spark-cluster`), to try LAKE_SPARK_MASTER=spark://… on one machine and to test it.

The wheel has no start-master.sh, so both daemons run through its `bin/spark-class`."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from resources.jvm import check_java, extra_jvm_options
from resources.spark_server import LOOPBACK, die_with_parent, free_port, listening, until_stopped

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DEFAULT_PORT = 7077
DEFAULT_WEBUI_PORT = 8080
DEFAULT_CORES = 1
DEFAULT_MEMORY = "1g"
START_SECONDS = 120.0
STOP_SECONDS = 30.0
# The daemons only keep track of executors; the executors get the worker's memory.
_DAEMON_MEMORY = "512m"
_TAIL_LINES = 20


@dataclass(frozen=True)
class Cluster:
    """A running master and worker: the URL drivers use, the master's web UI, and their folders."""

    master_url: str
    webui_url: str
    work_dir: Path
    log_dir: Path
    processes: tuple[subprocess.Popen, ...]

    def running(self) -> bool:
        return all(process.poll() is None for process in self.processes)

    def state(self) -> dict[str, Any]:
        return master_status(self.webui_url)


def spark_home() -> Path:
    """The pyspark package is a Spark distribution: bin/, sbin/ and jars/ are inside it."""
    return Path(pyspark.__file__).parent


def daemon_env(scratch: Path) -> dict[str, str]:
    """The daemons' environment: our java, executors' scratch space in `scratch`, and every port
    they and their executors open on loopback only (SPARK_LOCAL_IP also places the web UIs). The
    master's REST submission server (port 6066, unauthenticated) stays off: drivers connect to
    the master."""
    java = Path(check_java()).resolve()
    master_opts = os.environ.get("SPARK_MASTER_OPTS", "")
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "JAVA_HOME": str(java.parent.parent),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOCAL_DIRS": str(scratch),
        "SPARK_DAEMON_MEMORY": _DAEMON_MEMORY,
        "SPARK_MASTER_OPTS": f"{master_opts} -Dspark.master.rest.enabled=false".strip(),
        "SPARK_DAEMON_JAVA_OPTS": shlex.join(extra_jvm_options()),
    }


def master_command(port: int, webui_port: int) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        MASTER_CLASS,
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--webui-port",
        str(webui_port),
    ]


def worker_command(
    master_url: str, cores: int, memory: str, work_dir: Path, webui_port: int
) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        WORKER_CLASS,
        master_url,
        "--host",
        LOOPBACK,
        "--cores",
        str(cores),
        "--memory",
        memory,
        "--work-dir",
        str(work_dir),
        "--webui-port",
        str(webui_port),
    ]


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return " | ".join(line for line in lines[-_TAIL_LINES:] if line.strip())


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """A daemon in a process group of its own (its executors join it), dying with this process."""
    with log.open("ab") as output:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches us; we stop the group once
            preexec_fn=die_with_parent,
        )


def _stop_group(process: subprocess.Popen, grace_seconds: float = STOP_SECONDS) -> None:
    """SIGTERM to the daemon's group (its executors too), SIGKILL after the grace; returns once
    the group is empty, so no JVM outlives the cluster."""
    _signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        process.wait()
    # An executor its worker did not wait for goes too.
    _signal_group(process, signal.SIGKILL)
    deadline = time.monotonic() + grace_seconds
    while _signal_group(process, 0) and time.monotonic() < deadline:
        time.sleep(0.1)


def _signal_group(process: subprocess.Popen, sig: int) -> bool:
    """Send `sig` to the daemon's process group; False when nothing is left in it."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return False
    return True


def master_status(webui_url: str) -> dict[str, Any]:
    """The master's own JSON status: its workers and its active and completed applications."""
    with urllib.request.urlopen(f"{webui_url}/json/", timeout=5) as response:
        return json.load(response)


def _status(webui_url: str) -> dict[str, Any] | None:
    try:
        return master_status(webui_url)
    except (OSError, ValueError):
        return None


def _wait(
    what: str,
    processes: dict[Path, subprocess.Popen],
    webui_url: str,
    ready: Callable[[dict[str, Any]], bool],
    deadline: float,
) -> None:
    """Poll the master's JSON until `ready(status)`, or fail naming the log to read."""
    while True:
        status = _status(webui_url)
        if status is not None and ready(status):
            return
        for log, process in processes.items():
            if process.poll() is not None:
                raise LakeError(
                    f"the Spark {what} exited (status {process.returncode}) before it was ready: "
                    f"{_tail(log)}",
                    f"see {log}",
                )
        if time.monotonic() > deadline:
            log = next(reversed(processes))
            raise LakeError(
                f"the Spark {what} was not ready after {START_SECONDS:.0f} s: {_tail(log)}",
                f"see {log}",
            )
        time.sleep(0.25)


def _master_alive(status: dict[str, Any]) -> bool:
    return status.get("status") == "ALIVE"


def _worker_alive(status: dict[str, Any]) -> bool:
    return any(worker.get("state") == "ALIVE" for worker in status.get("workers", []))


@contextmanager
def local_cluster(
    folder: Path,
    port: int | None = None,
    webui_port: int | None = None,
    cores: int = DEFAULT_CORES,
    memory: str = DEFAULT_MEMORY,
) -> Iterator[Cluster]:
    """A master and one worker on 127.0.0.1 (free ports unless given), yielded once the worker is
    ALIVE and stopped on exit; in `folder`: logs/, work/ (executors' folders) and scratch/."""
    port = free_port() if port is None else port
    webui_port = free_port() if webui_port is None else webui_port
    for taken in (port, webui_port):
        # Spark would silently move to the next port, and the printed URL would be wrong.
        if listening(taken):
            raise LakeError(
                f"port {taken} on {LOOPBACK} is already in use (another Spark master?)",
                "stop what listens there or pick other ports with --port and --webui-port",
            )
    log_dir = folder / "logs"
    work_dir = folder / "work"
    scratch = folder / "scratch"
    for directory in (log_dir, work_dir, scratch):
        directory.mkdir(parents=True, exist_ok=True)
    env = daemon_env(scratch)
    master_url = f"spark://{LOOPBACK}:{port}"
    webui_url = f"http://{LOOPBACK}:{webui_port}"
    deadline = time.monotonic() + START_SECONDS
    with ExitStack() as stack:
        master_log = log_dir / "master.log"
        master = _spawn(master_command(port, webui_port), env, master_log)
        stack.callback(_stop_group, master)
        _wait("master", {master_log: master}, webui_url, _master_alive, deadline)
        worker_log = log_dir / "worker.log"
        worker = _spawn(
            worker_command(master_url, cores, memory, work_dir, free_port()), env, worker_log
        )
        stack.callback(_stop_group, worker)
        logs = {master_log: master, worker_log: worker}
        _wait("worker", logs, webui_url, _worker_alive, deadline)
        yield Cluster(master_url, webui_url, work_dir, log_dir, (master, worker))


def serve(
    settings: LakeSettings,
    port: int,
    webui_port: int,
    cores: int,
    memory: str,
    folder: Path | None = None,
) -> int:
    """Run the cluster in the foreground until SIGINT/SIGTERM, then stop both daemons."""
    folder = folder or settings.lake_home / "spark-cluster"
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with local_cluster(folder, port, webui_port, cores, memory) as cluster:
            print(
                f"Spark standalone master at {cluster.master_url} (web UI {cluster.webui_url}), "
                f"one worker with {cores} core(s) and {memory}; logs in {cluster.log_dir}, "
                f"executors' folders in {cluster.work_dir}. Set "
                f"LAKE_SPARK_MASTER={cluster.master_url} for `lake sql`, `lake spark-server` and "
                "Dagster runs; Ctrl-C stops it",
                flush=True,
            )
            if until_stopped(cluster.running):
                return 0
    except KeyboardInterrupt:  # while the daemons start
        return 0
    raise LakeError("the Spark master or worker exited by itself", f"see {folder / 'logs'}")
