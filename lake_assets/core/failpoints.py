"""Named points where tests kill the process (SIGKILL) to prove crash safety.

Set LAKE_FAILPOINT=<name> in a process's environment and it dies the moment it reaches that
point: no cleanup, no finally blocks, as with a power cut. Unset, a failpoint costs one lookup."""

from __future__ import annotations

import os
import signal

BEFORE_COMMIT = "load-before-commit"
AFTER_COMMIT = "load-after-commit"
BEFORE_PURGE = "load-before-purge"
REFRESH_BEFORE_COMMIT = "refresh-before-commit"
REFRESH_AFTER_COMMIT = "refresh-after-commit"
CONSUME_BEFORE_COMMIT = "consume-before-commit"
CONSUME_AFTER_COMMIT = "consume-after-commit"
KAFKA_PLANNED = "kafka-after-plan"
KAFKA_BEFORE_COMMIT = "kafka-before-commit"
KAFKA_AFTER_COMMIT = "kafka-after-commit"
EXPORT_AFTER_WRITE = "export-after-write"


def reached(name: str) -> None:
    if os.environ.get("LAKE_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
