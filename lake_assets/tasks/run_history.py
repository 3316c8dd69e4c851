"""Task history: every run of a task, as the run (or the next one, for a run that died) records
it, for SHOW TASK HISTORY and the task's asset."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import sqlalchemy as sa

from lake_assets.core.database import TEXT, owned_table
from lake_assets.core.history import History
from lake_assets.tasks.entry import TASK, TaskTrigger


class TaskRunState(StrEnum):
    """A task run in task history: ended (SUCCEED, FAILED, SKIPPED) or still under way."""

    SUCCEED = "SUCCEED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    EXECUTING = "EXECUTING"


@dataclass(frozen=True)
class TaskRunRecord:
    """One run of a task: how it ended, who started it, and what it consumed and wrote.
    `streams` maps each stream its statement reads to [offset before, offset after]."""

    id: str
    name: str
    state: TaskRunState
    trigger: TaskTrigger
    start_time: str
    end_time: str
    duration: float
    streams: dict[str, list[int]]
    rows_written: int | None = None
    error_message: str | None = None
    reason: str | None = None


RUNS = History(
    owned_table(
        "task_history",
        (TASK, "name"),
        sa.Column("id", TEXT, primary_key=True),
        sa.Column("name", TEXT, nullable=False),
        sa.Column("state", TEXT, nullable=False),
        sa.Column("trigger", TEXT, nullable=False),
        sa.Column("start_time", TEXT, nullable=False),
        sa.Column("end_time", TEXT, nullable=False),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("streams", TEXT, nullable=False),
        sa.Column("rows_written", sa.BigInteger),
        sa.Column("error_message", TEXT),
        sa.Column("reason", TEXT),
        sa.Index("task_history_by_name", "name", "start_time"),
    ),
    TaskRunRecord,
    newest=("start_time", "end_time"),
)
