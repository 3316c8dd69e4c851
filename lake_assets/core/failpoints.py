"""Named points where tests kill the process (SIGKILL) to prove crash safety.

Set LAKE_FAILPOINT=<name> in a process's environment and it dies the moment it reaches that
point: no cleanup, no finally blocks, as with a power cut. Unset, a failpoint costs one lookup.
Each kind names its failpoints beside the code that reaches them."""

from __future__ import annotations

import os
import signal


def reached(name: str) -> None:
    if os.environ.get("LAKE_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
