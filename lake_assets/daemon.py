"""The Dagster daemon on this project's workspace, as a child process (demo, bench and tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent


def spawn_daemon(env: dict[str, str], output: IO) -> subprocess.Popen:
    """One daemon per DAGSTER_HOME; `env` also carries LAKE_HOME and LAKE_SPARK_REMOTE."""
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster-daemon")), "run",
         "-w", str(ROOT / "workspace.yaml")],
        cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
    )  # fmt: skip
