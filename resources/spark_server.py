"""A warm Spark Connect server with the lake's Spark and Delta configuration (`lake spark-server`).

Runs and `lake sql` then connect to it instead of starting a JVM each (LAKE_SPARK_REMOTE)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO

import pyspark

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import SPARK_SERVER_FILE, LakeSettings, announced_server
from resources.jvm import check_java
from resources.spark import DEFAULT_CONNECT_PORT, remote_address, spark_conf, with_spark_jars

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1


def server_port(settings: LakeSettings, port: int | None = None) -> int:
    """--port, else LAKE_SPARK_REMOTE's port, else 15002."""
    if port is not None:
        return port
    return (
        remote_address(settings.spark_remote)[1] if settings.spark_remote else DEFAULT_CONNECT_PORT
    )


def free_port() -> int:
    """A loopback port nothing listens on right now (for servers the tests and benches start)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def server_url(port: int) -> str:
    return f"sc://{LOOPBACK}:{port}"


def listening(port: int) -> bool:
    try:
        socket.create_connection((LOOPBACK, port), timeout=1).close()
    except OSError:
        return False
    return True


def server_command(settings: LakeSettings, port: int) -> list[str]:
    """pyspark's own spark-submit and Connect server jar, configured like the local session."""
    conf = with_spark_jars(spark_conf(settings), settings.jars_dir)
    conf["spark.app.name"] = "lake-connect-server"
    conf["spark.connect.grpc.binding.address"] = LOOPBACK
    conf["spark.connect.grpc.binding.port"] = str(port)
    command = [str(Path(pyspark.__file__).parent / "bin" / "spark-submit"), "--class", SERVER_CLASS]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def until_stopped(running: Callable[[], bool]) -> bool:
    """Wait while `running()` until SIGINT or SIGTERM; whether a signal ended the wait. The
    signals only set a flag from here on: raised as KeyboardInterrupt inside `Popen.poll`, one
    could leave the process's wait lock held, and stopping it then waited forever."""
    signals: list[int] = []  # a plain list: a handler must take no lock the loop may hold
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, _: signals.append(number))
    while not signals and running():
        time.sleep(0.2)
    return bool(signals)


def die_with_parent() -> None:
    """The JVM gets SIGTERM when this process dies without stopping it (Linux): no orphan JVM."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def cleaning_up() -> None:
    """From here on SIGINT and SIGTERM are ignored: a supervisor's SIGTERM right after a
    terminal's Ctrl-C must not cut a cleanup short (stop() kills once its grace period ends)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def stop(process: subprocess.Popen, grace_seconds: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not exited within the grace period."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_listening(process: subprocess.Popen, port: int, log: str) -> None:
    while not listening(port):
        if process.poll() is not None:
            raise LakeError(
                f"the Spark Connect server exited (status {process.returncode}) before it listened "
                f"on port {port}",
                f"see {log}",
            )
        time.sleep(0.2)


def serve(settings: LakeSettings, port: int) -> int:
    """Run the server in the foreground until SIGINT/SIGTERM, then stop the JVM cleanly."""
    if listening(port):
        raise LakeError(
            f"port {port} on {LOOPBACK} is already in use (another Spark Connect server?)",
            "stop what listens there or pick another port with --port",
        )
    check_java()
    command = server_command(settings, port)
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    console = settings.log_dir / "spark-connect-server.log"
    announced = settings.lake_home / SPARK_SERVER_FILE
    signal.signal(signal.SIGTERM, _interrupt)
    with console.open("ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)},
            start_new_session=True,  # a terminal's Ctrl-C reaches us; we stop the JVM once
            preexec_fn=die_with_parent,
        )
    try:
        wait_until_listening(process, port, str(console))
        url = server_url(port)
        announced.write_text(json.dumps({"remote": url, "pid": os.getpid()}))
        print(
            f"Spark Connect server listening on {url} (logs in {settings.log_dir}); "
            f"`lake sql` and Dagster runs with LAKE_HOME={settings.lake_home} use it by "
            "themselves",
            flush=True,
        )
        status = process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        cleaning_up()
        if announced_server(settings.lake_home) == server_url(port):
            announced.unlink(missing_ok=True)  # ours: a server that failed to start leaves it
        stop(process)
    raise LakeError(
        f"the Spark Connect server exited by itself (status {status})", f"see {console}"
    )


def spawn_server(
    port: int, env: dict[str, str], output: IO | int | None = None
) -> subprocess.Popen:
    """Start `lake spark-server` as a child process and return once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lake_assets.cli", "spark-server", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        env=env,
    )
    try:
        wait_until_listening(process, port, getattr(output, "name", "its output"))
    except BaseException:
        stop(process)
        raise
    return process
