"""A task as the catalog keeps it: its statement, when it runs, and the run under way."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject
from lake_assets.streams.entry import Landing

# Tasks' own namespace: a task may share its name with a table.
TASK = "task"


class TaskState(StrEnum):
    """Whether a task runs by itself (its schedule or its streams' data), or only by hand."""

    STARTED = "STARTED"
    SUSPENDED = "SUSPENDED"


class TaskTrigger(StrEnum):
    """Who started a task run: its schedule, data on its streams, or a person."""

    SCHEDULED = "SCHEDULED"
    STREAM = "STREAM"
    MANUAL = "MANUAL"


@dataclass(frozen=True)
class Schedule:
    """`SCHEDULE = '…'` as written (`text`), and as an interval or a cron in a time zone."""

    text: str
    interval_seconds: int | None = None
    cron: str | None = None
    timezone: str = "UTC"


@dataclass(frozen=True)
class RunClaim:
    """A run under way, held on the task's entry so that two runs never overlap: its process
    (`owner`, as streams.offsets names one), and once its statement starts, the offsets of the
    streams it reads, which tell what a run that died consumed."""

    id: str
    owner: str
    trigger: TaskTrigger
    start_time: str
    offsets: dict[str, int] | None = None


@dataclass(frozen=True)
class TaskEntry(CatalogObject):
    """`when` is STREAM_HAS_DATA's streams as OR of ANDs; `streams` are those the statement
    reads and `target` what it writes, a table or (`lands_in` VOLUME) a volume: neither is
    dropped while the task is there."""

    NAMESPACE: ClassVar[str] = TASK
    LABEL: ClassVar[str] = "task"
    SHOW: ClassVar[str] = "SHOW TASKS"
    CREATE: ClassVar[str] = "CREATE TASK"
    REFERENCES: ClassVar[dict[str, str]] = {
        "streams": RELATION,
        "target_table": RELATION,
        "target_volume": "volume",
    }
    RUNTIME: ClassVar[tuple[str, ...]] = ("run",)

    definition: str = ""
    target: str = ""
    lands_in: Landing = Landing.TABLE
    streams: tuple[str, ...] = ()
    schedule: Schedule | None = None
    when: tuple[tuple[str, ...], ...] = ()
    comment: str | None = None
    suspended: bool = False
    run: RunClaim | None = None

    @property
    def target_table(self) -> str | None:
        return self.target if self.lands_in is Landing.TABLE else None

    @property
    def target_volume(self) -> str | None:
        return self.target if self.lands_in is Landing.VOLUME else None

    @property
    def state(self) -> TaskState:
        return TaskState.SUSPENDED if self.suspended else TaskState.STARTED

    @property
    def when_streams(self) -> tuple[str, ...]:
        """Every stream WHEN names, each once."""
        return tuple(dict.fromkeys(name for group in self.when for name in group))

    @property
    def when_text(self) -> str | None:
        return (
            " OR ".join(
                " AND ".join(f"STREAM_HAS_DATA('{name}')" for name in group) for group in self.when
            )
            or None
        )
