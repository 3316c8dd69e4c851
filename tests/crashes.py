"""Crashes at named failpoints: in-process, cheaper than a killed process where nothing but the
code after the failpoint needs to be skipped; or a `lake sql` process SIGKILLed there, where a
fresh process must find what the dead one left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lake_assets.core import failpoints

ROOT = Path(__file__).resolve().parents[1]


class Crash(BaseException):
    """Stands in for SIGKILL in-process: nothing after the failpoint runs."""


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Until `monkeypatch.undo()`, reaching failpoint `point` raises Crash."""

    def reached(name: str) -> None:
        if name == point:
            raise Crash(name)

    monkeypatch.setattr(failpoints, "reached", reached)


def lake_sql_killed_at(lake_home: Path, failpoint: str, sql: str) -> subprocess.CompletedProcess:
    """`lake sql -e sql` on the lakehouse at `lake_home`, in a process that dies (SIGKILL) when
    it reaches `failpoint`."""
    env = {**os.environ, "LAKE_HOME": str(lake_home), "LAKE_FAILPOINT": failpoint}
    return subprocess.run(
        [sys.executable, "-m", "lake_assets.cli", "sql", "-e", sql],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
