"""In-process crashes at named failpoints: cheaper than a killed process where nothing but the
code after the failpoint needs to be skipped."""

from __future__ import annotations

import pytest

from lake_assets.core import failpoints


class Crash(BaseException):
    """Stands in for SIGKILL in-process: nothing after the failpoint runs."""


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Until `monkeypatch.undo()`, reaching failpoint `point` raises Crash."""

    def reached(name: str) -> None:
        if name == point:
            raise Crash(name)

    monkeypatch.setattr(failpoints, "reached", reached)
