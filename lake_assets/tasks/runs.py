"""One run of a task, the same for EXECUTE TASK and for a Dagster run.

A run first claims the task in the catalog (one run at a time, across processes; a claim whose
process died is settled by the next run, which records the dead run FAILED). WHEN is checked
from the streams' Delta logs alone, so a run with nothing to do never starts Spark. The
statement then runs through the session as `lake sql` runs it: the streams it reads move with
its commit and only with it (streams.offsets), so a failed or killed run moves no offset and
the next run retries the same versions."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import commits_since
from lake_assets.core.delta import row_changes
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.spark_errors import as_lake_error
from lake_assets.sql.statements import Dml
from lake_assets.streams import offsets
from lake_assets.streams.entry import StreamEntry
from lake_assets.streams.pending import has_data
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.entry import RunClaim, TaskEntry, TaskTrigger
from lake_assets.tasks.grammar import TaskStatement
from lake_assets.tasks.run_history import RUNS, TaskRunRecord, TaskRunState

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

ANOTHER_RUN = "another run of the task is under way"


@dataclass
class _Run:
    """A run as it goes: its claim, its clock, and the offsets its streams had before."""

    claim: RunClaim
    clock: float = field(default_factory=time.monotonic)
    before: dict[str, int] = field(default_factory=dict)

    def record(
        self,
        name: str,
        state: TaskRunState,
        streams: dict[str, list[int]] | None = None,
        **fields: Any,
    ) -> TaskRunRecord:
        claim = self.claim
        return TaskRunRecord(
            claim.id, name, state, claim.trigger, claim.start_time, now_utc(),
            time.monotonic() - self.clock, streams or {}, **fields,
        )  # fmt: skip


def run_task(session: Context, name: str, trigger: TaskTrigger) -> TaskRunRecord:
    """Run a task once and record it: SUCCEED and SKIPPED come back, FAILED is recorded, then
    raised. A suspended task runs only by hand (MANUAL)."""
    catalog = session.catalog
    entry = catalog.get(TaskEntry, name)
    run = _Run(RunClaim(uuid.uuid4().hex, offsets.owner(), trigger, now_utc()))
    if entry.suspended and trigger != TaskTrigger.MANUAL:
        return _recorded(catalog, run.record(name, TaskRunState.SKIPPED, reason="it is suspended"))
    entry, holder, dead = _claim(catalog, name, run.claim)
    if holder is not None:
        reason = f"{ANOTHER_RUN} (process {holder.owner})"
        return _recorded(catalog, run.record(name, TaskRunState.SKIPPED, reason=reason))
    try:
        if dead is not None:
            _record_dead(session, entry, dead)
        return _recorded(catalog, _run(session, entry, run))
    except BaseException as error:
        failure = _lake_error(catalog, error)
        record = run.record(
            name,
            TaskRunState.FAILED,
            streams=_consumed(catalog, run.before),
            error_message=str(failure),
        )
        RUNS.record(catalog, record)
        if not isinstance(error, Exception):
            raise
        raise LakeError(f"task {name} failed: {failure.what}", failure.fix) from error
    finally:
        _release(catalog, name, run.claim.id)


def _recorded(catalog: Catalog, record: TaskRunRecord) -> TaskRunRecord:
    RUNS.record(catalog, record)
    return record


def _lake_error(catalog: Catalog, error: BaseException) -> LakeError:
    if isinstance(error, LakeError):
        return error
    if isinstance(error, Exception):
        return as_lake_error(error, catalog.relation_locations())
    return LakeError(
        f"the run was interrupted ({type(error).__name__})",
        "run the task again: it retries the same stream versions",
    )


def _run(session: Context, entry: TaskEntry, run: _Run) -> TaskRunRecord:
    catalog = session.catalog
    _settle_streams(session, entry)
    if entry.when and not when_holds(catalog, entry):
        return run.record(entry.name, TaskRunState.SKIPPED, reason=f"no data: {entry.when_text}")
    statement = session.grammar.parse(entry.definition)
    assert isinstance(statement, TaskStatement)  # CREATE TASK accepted nothing else
    run.before = {name: catalog.get(StreamEntry, name).offset for name in entry.streams}
    _note_offsets(catalog, entry.name, run)
    version = (
        catalog.get(TableEntry, statement.target).version if isinstance(statement, Dml) else None
    )
    session.execute(statement)
    return run.record(
        entry.name,
        TaskRunState.SUCCEED,
        streams=_consumed(catalog, run.before),
        rows_written=_rows_written(session, statement, version),
    )


def when_holds(catalog: Catalog, entry: TaskEntry) -> bool:
    """WHEN, read from the streams' Delta logs alone (no Spark)."""
    data = {name: has_data(catalog.get(StreamEntry, name)) for name in entry.when_streams}
    return any(all(data[name] for name in group) for group in entry.when)


def _settle_streams(session: Context, entry: TaskEntry) -> None:
    """Settle claims that dead consumers left on the task's streams, so that WHEN and the
    offsets a run records see where the streams really are (Spark starts only for those)."""
    for name in entry.streams:
        stream = session.catalog.get(StreamEntry, name)
        if stream.claim is not None and not offsets.alive(stream.claim.owner):
            offsets.resolve(session.spark, session.catalog, stream)


def _rows_written(session: Context, statement: TaskStatement, before: int | None) -> int | None:
    """Rows inserted, updated and deleted by the statement's commit, from its metrics; the
    commit is the version the statement recorded for its target. None for a volume export."""
    if not isinstance(statement, Dml):
        return None
    target = session.catalog.get(TableEntry, statement.target)
    if target.version is None or target.version == before:
        return 0
    for commit in commits_since(session.spark, target.location, target.version - 1):
        if commit.version == target.version:
            changes = row_changes(commit.operation or "", commit.operation_metrics)
            return sum(changes) if changes is not None else None
    return None


def _consumed(catalog: Catalog, before: dict[str, int]) -> dict[str, list[int]]:
    """Each stream's offset before the run and now: the versions after the first, to the second,
    were consumed."""
    now = {name: catalog.find(StreamEntry, name) for name in before}
    return {name: [offset, entry.offset] for name, offset in before.items() if (entry := now[name])}


def live_run(entry: TaskEntry) -> RunClaim | None:
    """The task's run under way, if its process is alive; a dead one's claim waits for the next
    run to settle it."""
    run = entry.run
    return run if run is not None and offsets.alive(run.owner) else None


def _claim(
    catalog: Catalog, name: str, claim: RunClaim
) -> tuple[TaskEntry, RunClaim | None, RunClaim | None]:
    """Take the task for this run in one catalog transaction: the task, the live run that holds
    it instead (None when taken), and the claim of a dead run this one took over."""
    found: dict[str, RunClaim | None] = {"holder": None, "dead": None}

    def take(entry: TaskEntry) -> TaskEntry:
        found["holder"] = live_run(entry)
        if found["holder"] is not None:
            return entry
        found["dead"] = entry.run
        return replace(entry, run=claim)

    entry = catalog.update(TaskEntry, name, take)
    return entry, found["holder"], found["dead"]


def _note_offsets(catalog: Catalog, name: str, run: _Run) -> None:
    """Keep the offsets before the statement in the claim: if this process dies, the next run
    tells from them what it consumed."""
    claim = replace(run.claim, offsets=run.before)

    def note(entry: TaskEntry) -> TaskEntry:
        return replace(entry, run=claim) if entry.run and entry.run.id == claim.id else entry

    catalog.update(TaskEntry, name, note)


def _record_dead(session: Context, entry: TaskEntry, dead: RunClaim) -> None:
    """Record a run whose process died FAILED, with what its streams show it consumed: their
    claims are settled first, so an offset moved if, and only if, its write committed."""
    catalog = session.catalog
    _settle_streams(session, entry)
    consumed = _consumed(catalog, dead.offsets or {})
    if dead.offsets is None:
        how = "before its statement started"
    elif not consumed:
        how = f"while its statement ran: DESC HISTORY {entry.target} shows whether it committed"
    elif any(before != after for before, after in consumed.values()):
        how = "after its write committed: the stream versions it consumed stay consumed"
    else:
        how = "before its write committed: it wrote nothing"
    end = now_utc()
    duration = (
        datetime.fromisoformat(end) - datetime.fromisoformat(dead.start_time)
    ).total_seconds()
    RUNS.record(catalog,
        TaskRunRecord(
            dead.id, entry.name, TaskRunState.FAILED, dead.trigger, dead.start_time, end,
            duration, consumed, error_message=f"its process ({dead.owner}) died {how}",
        )
    )  # fmt: skip


def _release(catalog: Catalog, name: str, run_id: str) -> None:
    def release(entry: TaskEntry) -> TaskEntry:
        return replace(entry, run=None) if entry.run and entry.run.id == run_id else entry

    try:
        catalog.update(TaskEntry, name, release)
    except LakeError:  # the task was dropped while it ran: nothing holds it any more
        return
