"""CREATE TASK, ALTER TASK … SUSPEND|RESUME, EXECUTE TASK, SHOW TASKS, DESC TASK, DROP TASK and
SHOW TASK HISTORY. Only EXECUTE TASK may start Spark; the rest read and write the catalog."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import drop_object, name_taken
from lake_assets.core.results import Result
from lake_assets.sql.statements import DescribeObject, Dml
from lake_assets.streams.entry import Landing, StreamEntry
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.entry import TaskEntry, TaskTrigger
from lake_assets.tasks.grammar import AlterTask, CreateTask, ExecuteTask, ShowTaskHistory, reads
from lake_assets.tasks.run_history import RUNS, TaskRunRecord, TaskRunState
from lake_assets.tasks.runs import live_run, run_task, when_holds
from lake_assets.volumes.entry import VolumeEntry

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

HISTORY_COLUMNS = [
    "name", "state", "trigger", "start_time", "end_time", "duration", "rows_written", "streams",
    "error_message", "reason",
]  # fmt: skip


def create_task(session: Context, stmt: CreateTask) -> Result:
    """Checked against the catalog, not run: the target and every relation the statement reads
    exist, and WHEN names streams. A task starts STARTED, as a pipe starts RUNNING."""
    catalog = session.catalog
    taken = name_taken(session, TaskEntry, stmt.name, stmt.if_not_exists)
    if taken is not None:
        return taken
    statement = stmt.statement
    if isinstance(statement, Dml):
        target, lands_in = catalog.get(TableEntry, statement.target).name, Landing.TABLE
    else:
        target, lands_in = catalog.get(VolumeEntry, statement.volume).name, Landing.VOLUME
    relations = {name: catalog.relation(name) for name in reads(statement)}
    streams = tuple(n for n, r in relations.items() if isinstance(r, StreamEntry))
    for group in stmt.when:
        for name in group:
            if name not in streams:
                raise LakeError(
                    f"task {stmt.name} waits for data on {name}, which is not a stream",
                    "name a stream in STREAM_HAS_DATA (see SHOW STREAMS)",
                )
    entry = catalog.add(
        TaskEntry(
            stmt.name,
            definition=stmt.definition,
            target=target,
            lands_in=lands_in,
            streams=streams,
            schedule=stmt.schedule,
            when=stmt.when,
            comment=stmt.comment,
        )
    )
    return Result.status(f"created task {stmt.name}; it {_runs_when(entry)}")


def _runs_when(entry: TaskEntry) -> str:
    """When a started task runs by itself, in words."""
    if entry.schedule is not None:
        also = f", when {entry.when_text}" if entry.when else ""
        return f"runs on SCHEDULE '{entry.schedule.text}'{also}"
    if entry.when:
        return f"runs when {entry.when_text}"
    return "runs only by EXECUTE TASK: it has neither SCHEDULE nor WHEN"


def alter_task(session: Context, stmt: AlterTask) -> Result:
    entry = session.catalog.update(
        TaskEntry, stmt.name, lambda e: replace(e, suspended=stmt.suspended)
    )
    return Result.status(f"task {stmt.name} is {entry.state}")


def execute_task(session: Context, stmt: ExecuteTask) -> Result:
    """Runs the task now in this process, schedule aside but WHEN checked (as Snowflake's
    EXECUTE TASK does); a FAILED run raises its error, the other runs show their record."""
    record = run_task(session, stmt.name, TaskTrigger.MANUAL)
    return Result(HISTORY_COLUMNS, [_history_row(record)])


def show_tasks(session: Context) -> Result:
    catalog = session.catalog
    rows = []
    for entry in catalog.entries(TaskEntry):
        last = _last_run(catalog, entry.name)
        rows.append(
            (
                entry.name,
                entry.state,
                entry.schedule.text if entry.schedule else None,
                entry.when_text,
                entry.definition,
                entry.comment,
                entry.created_at,
                last.state if last else None,
                last.start_time if last else None,
            )
        )
    return Result(
        [
            "name", "state", "schedule", "when", "definition", "comment", "created_at",
            "last_run_state", "last_run_time",
        ],
        rows,
    )  # fmt: skip


def _last_run(catalog: Catalog, name: str) -> TaskRunRecord | None:
    history = RUNS.newest_first(catalog, name)
    return history[0] if history else None


def describe_task(session: Context, stmt: DescribeObject) -> Result:
    catalog = session.catalog
    entry = catalog.get(TaskEntry, stmt.name)
    last = _last_run(catalog, entry.name)
    schedule = entry.schedule
    running = live_run(entry)
    return Result.properties(
        name=entry.name,
        state=entry.state,
        schedule=schedule.text if schedule else None,
        cron=f"{schedule.cron} {schedule.timezone}" if schedule and schedule.cron else None,
        when=entry.when_text,
        when_has_data=when_holds(catalog, entry) if entry.when else None,
        streams=", ".join(entry.streams) or None,
        target=entry.target,
        definition=entry.definition,
        last_run=f"{last.start_time} {last.state}" if last else None,
        running_since=running.start_time if running else None,
        running_process=running.owner if running else None,
        comment=entry.comment,
        created_at=entry.created_at,
    )


def show_task_history(session: Context, stmt: ShowTaskHistory) -> Result:
    """Runs newest first; a run under way shows first, as EXECUTING."""
    catalog = session.catalog
    tasks = [catalog.get(TaskEntry, stmt.name)] if stmt.name else catalog.entries(TaskEntry)
    executing = [
        (task.name, TaskRunState.EXECUTING, run.trigger, run.start_time)
        + (None,) * (len(HISTORY_COLUMNS) - 4)
        for task in tasks
        if (run := live_run(task)) is not None
    ]
    return Result(
        HISTORY_COLUMNS,
        executing + [_history_row(record) for record in RUNS.newest_first(catalog, stmt.name)],
    )


def _history_row(r: TaskRunRecord) -> tuple:
    return (
        r.name, r.state, r.trigger, r.start_time, r.end_time, round(r.duration, 3),
        r.rows_written, json.dumps(r.streams), r.error_message, r.reason,
    )  # fmt: skip


drop_task = drop_object(TaskEntry)
