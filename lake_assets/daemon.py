"""The Dagster daemon on this project's code location, as child processes (demo, bench and tests):
`lake code-server` first, then the daemon on the workspace it writes."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lake_assets.code_server import spawn_code_server
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS
from resources.spark_server import stop

ROOT = Path(__file__).resolve().parent.parent
# Dagster's freshness daemon looks every 30 s unless told; at the daemon's loop, what the UI shows
# as fresh or late follows a dynamic table's lag within seconds.
FRESHNESS_LOOP = {"FRESHNESS_DAEMON_INTERVAL_SECONDS": str(DAEMON_LOOP_SECONDS)}


@dataclass(frozen=True)
class Daemon:
    """The daemon and the code server it reads the definitions from."""

    process: subprocess.Popen
    code_server: subprocess.Popen

    def stop(self) -> None:
        """The daemon first, so that it never calls a code server that is gone."""
        stop(self.process)
        stop(self.code_server)


def spawn_daemon(env: dict[str, str], output: IO) -> Daemon:
    """One daemon per DAGSTER_HOME; `env` also carries LAKE_HOME and LAKE_SPARK_REMOTE. The code
    server follows the catalog: objects created while the daemon runs take effect by themselves."""
    code_server, workspace = spawn_code_server(env, output)
    try:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("dagster-daemon")), "run", "-w", str(workspace)],
            cwd=ROOT, env={**FRESHNESS_LOOP, **env}, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    except BaseException:
        stop(code_server)
        raise
    return Daemon(process, code_server)
