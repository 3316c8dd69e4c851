"""Every state, mode, trigger and status the lakehouse records, each in one place. They are
StrEnums: stored and shown as their names, compared equal to them."""

from __future__ import annotations

from enum import StrEnum


class LoadStatus(StrEnum):
    """A file's load, in load history."""

    LOADED = "LOADED"
    LOAD_FAILED = "LOAD_FAILED"


class IngestMode(StrEnum):
    """How a volume pipe learns of new files."""

    LIST_PURGE = "LIST_PURGE"
    EVENT_NOTIFICATION = "EVENT_NOTIFICATION"


class PipeKind(StrEnum):
    """Where a pipe reads: files in a volume, or messages in a Kafka topic."""

    VOLUME = "VOLUME"
    KAFKA = "KAFKA"


class BatchState(StrEnum):
    """A Kafka pipe's batch: its range is planned (and retried as is) until its commit lands."""

    PLANNED = "PLANNED"
    COMMITTED = "COMMITTED"


class PipeStatus(StrEnum):
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"


class RefreshState(StrEnum):
    """How a dynamic table's refresh ended."""

    SUCCEED = "SUCCEED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class RefreshMode(StrEnum):
    INCREMENTAL = "INCREMENTAL"
    FULL = "FULL"
    NO_DATA = "NO_DATA"


class RefreshTrigger(StrEnum):
    """Who asked for a refresh: its creation, a person, its interval, or a source's change."""

    CREATION = "CREATION"
    MANUAL = "MANUAL"
    SCHEDULED = "SCHEDULED"
    UPSTREAM = "UPSTREAM"


class SchedulingState(StrEnum):
    """Whether a dynamic table refreshes by itself."""

    ACTIVE = "ACTIVE"
    SUSPENDED = "SUSPENDED"


class StreamMode(StrEnum):
    """What a table stream returns: the net change set, or only the rows inserted."""

    STANDARD = "STANDARD"
    APPEND_ONLY = "APPEND_ONLY"


class ChangeType(StrEnum):
    """A stream row's `__change_type`."""

    INSERT = "INSERT"
    UPDATE_BEFORE = "UPDATE_BEFORE"
    UPDATE_AFTER = "UPDATE_AFTER"
    DELETE = "DELETE"


class TaskState(StrEnum):
    """Whether a task runs by itself (its schedule or its streams' data), or only by hand."""

    STARTED = "STARTED"
    SUSPENDED = "SUSPENDED"


class TaskRunState(StrEnum):
    """A task run in task history: ended (SUCCEED, FAILED, SKIPPED) or still under way."""

    SUCCEED = "SUCCEED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    EXECUTING = "EXECUTING"


class TaskTrigger(StrEnum):
    """Who started a task run: its schedule, data on its streams, or a person."""

    SCHEDULED = "SCHEDULED"
    STREAM = "STREAM"
    MANUAL = "MANUAL"
