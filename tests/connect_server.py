"""A real `lake spark-server` on loopback for the tests that run the lake over Spark Connect."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import SPARK_SERVER_FILE, announced_server
from resources.spark_server import server_url, spawn_server, stop
from tests.server_ports import PortTaken, failed_to_start, listens, log_size, on_a_free_port


def _start(env: dict[str, str], log_path: Path, port: int) -> tuple[subprocess.Popen, int]:
    """The server on `port` once it, not another process that took the port, listens there."""
    since = log_size(log_path)
    try:
        with log_path.open("ab") as log:
            server = spawn_server(port, env, log)
    except LakeError:
        raise failed_to_start(log_path, since, "the Spark Connect server", port) from None
    if not listens(server, port):
        stop(server)
        raise PortTaken(f"another process listens on port {port}")
    return server, port


@contextmanager
def connect_server(home: Path) -> Iterator[str]:
    """The server's URL while it runs; its teardown leaves PySpark in local mode again."""
    env = {**os.environ, "LAKE_HOME": str(home / "lake")}
    env.pop("LAKE_SPARK_REMOTE", None)
    log_path = home / "server.log"
    server, port = on_a_free_port(partial(_start, env, log_path))
    # It announces itself under its lake home once it listens, for `lake sql` to find it.
    deadline = time.monotonic() + 30
    while announced_server(home / "lake") != server_url(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert announced_server(home / "lake") == server_url(port)
    try:
        yield server_url(port)
    finally:
        # Connect sessions switch pyspark.sql.functions to Connect mode; the other tests are local.
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        stop(server)
    assert server.returncode == 0, log_path.read_text()
    assert not (home / "lake" / SPARK_SERVER_FILE).exists()
