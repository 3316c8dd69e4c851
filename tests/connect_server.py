"""A real `lake spark-server` on loopback for the tests that run the lake over Spark Connect."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from resources.spark_server import free_port, server_url, spawn_server, stop


@contextmanager
def connect_server(home: Path) -> Iterator[str]:
    """The server's URL while it runs; its teardown leaves PySpark in local mode again."""
    env = {**os.environ, "LAKE_HOME": str(home / "lake")}
    env.pop("LAKE_SPARK_REMOTE", None)
    port = free_port()
    with (home / "server.log").open("wb") as log:
        server = spawn_server(port, env, log)
    try:
        yield server_url(port)
    finally:
        # Connect sessions switch pyspark.sql.functions to Connect mode; the other tests are local.
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        stop(server)
    assert server.returncode == 0, (home / "server.log").read_text()
