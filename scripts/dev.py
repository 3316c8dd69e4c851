"""`make dev`: a warm Spark Connect server, `lake code-server` (the code location, served anew when
the catalog changes), then `dagster dev` on its workspace, whose runs use the Spark server; Ctrl-C
stops all three.

LAKE_SPARK_REMOTE (default sc://127.0.0.1:15002) says where the Spark server listens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from lake_assets.code_server import spawn_code_server
from lake_assets.core.errors import LakeError
from lake_assets.daemon import FRESHNESS_LOOP
from resources.spark import DEFAULT_CONNECT_PORT, remote_address
from resources.spark_server import LOOPBACK, spawn_server, stop

ROOT = Path(__file__).resolve().parent.parent


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> int:
    url = os.environ.get("LAKE_SPARK_REMOTE") or f"sc://{LOOPBACK}:{DEFAULT_CONNECT_PORT}"
    env = {**FRESHNESS_LOOP, **os.environ, "LAKE_SPARK_REMOTE": url}
    # Both, even when started with SIGINT ignored (in the background, under nohup): the children
    # then take SIGINT's default, and `dagster dev` stops its webserver and daemon with it.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    server = code_server = dagster = None
    try:
        server = spawn_server(remote_address(url)[1], env)
        code_server, workspace = spawn_code_server(env)
        dagster = subprocess.Popen(
            [str(Path(sys.executable).with_name("dagster")), "dev", "-w", str(workspace),
             "-h", "127.0.0.1", "-p", "3000"],
            cwd=ROOT,
            env=env,
        )  # fmt: skip
        return dagster.wait()
    except LakeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for process in (dagster, code_server, server):
            if process is not None:
                stop(process)


if __name__ == "__main__":
    sys.exit(main())
