"""The refresh of a dynamic table: incremental from its sources' change data feed, or FULL.

A refresh is one Delta commit whose userMetadata carries the source versions it consumed, so the
next refresh starts exactly where the last committed one stopped; the SQLite refresh history is
an index rebuilt from those commits whenever it lags (a crash between the commit and the index
update loses no record and applies no change twice)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession
from sqlglot import exp

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import Fence, decode, fence_at
from lake_assets.core.delta import (
    Commit,
    latest_version,
    row_changes,
    row_count,
    session_conf,
)
from lake_assets.core.entries import StoredRelation, now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.spark_errors import as_lake_error
from lake_assets.dynamic_tables.choosing import compiled, estimate, why_full
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.operators.stage import write_stages
from lake_assets.dynamic_tables.refreshes import (
    REFRESH_MARKER,
    REFRESHES,
    Read,
    RefreshCommit,
    RefreshMode,
    RefreshRecord,
    RefreshState,
    RefreshTrigger,
)
from lake_assets.dynamic_tables.runtime.sources import (
    SourceRead,
    incremental_conf,
)
from lake_assets.dynamic_tables.runtime.writing import Phases, Write
from lake_assets.sql.grammar import Grammar
from lake_assets.sql.statements import Query
from lake_assets.tables.engine import enable_change_tracking
from lake_assets.tables.entry import TableEntry

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
REFRESH_AFTER_COMMIT = "refresh-after-commit"

# Delta's error conditions when a change data feed cannot be read for the versions asked for.
_FEED_GONE = ("DELTA_MISSING_CHANGE_DATA", "DELTA_CHANGE_TABLE_FEED_DISABLED", "DELTA_CHANGE_DATA")


@dataclass(frozen=True)
class RefreshOutcome:
    """What one refresh did; `source_versions` are the versions it read (name → version)."""

    name: str
    state: str
    mode: str | None
    trigger: RefreshTrigger
    reason: str | None = None
    rows_inserted: int = 0
    rows_deleted: int = 0
    source_versions: dict[str, int] = field(default_factory=dict)
    duration: float = 0.0
    version: int | None = None
    error: str | None = None
    # Where the time went, in seconds: see Phases.
    phases: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        if self.state != RefreshState.SUCCEED:
            return f"{self.state}: {self.error or self.reason}"
        why = f" ({self.reason})" if self.reason else ""
        at = f"; {self.name} is at version {self.version}" if self.version is not None else ""
        return (
            f"REFRESH {self.mode}{why}: {self.rows_inserted} rows inserted, "
            f"{self.rows_deleted} deleted in {self.duration:.2f} s{at}"
        )


def sources_of(entry: DynamicTableEntry) -> tuple[str, ...]:
    """The tables and dynamic tables a dynamic table reads (its upstream assets)."""
    return entry.sources


def definition_of(entry: DynamicTableEntry) -> exp.Expr:
    statement = Grammar().spark(entry.query)
    assert isinstance(statement, Query)
    return statement.expression


def source_columns(catalog: Catalog, sources: Iterable[str]) -> dict[str, list[str]]:
    """The columns of each source the catalog knows, by name (they qualify the query's)."""
    relations = {name: catalog.find_relation(name) for name in sources}
    return {
        name: [c.name for c in relation.columns]
        for name, relation in relations.items()
        if isinstance(relation, StoredRelation)
    }


def plan_of(entry: DynamicTableEntry, catalog: Catalog) -> Plan:
    """The plan of the query as a refresh runs it (see lowering.classify)."""
    query, columns = definition_of(entry), source_columns(catalog, entry.sources)
    return classify(query, columns)


def untracked(catalog: Catalog, entry: DynamicTableEntry) -> list[str]:
    """The tables the dynamic table reads whose change tracking is off."""
    relations = {name: catalog.relation(name) for name in entry.sources}
    return [
        name
        for name, relation in relations.items()
        if isinstance(relation, TableEntry) and not relation.change_tracking
    ]


def record_skipped(
    catalog: Catalog, name: str, trigger: RefreshTrigger, reason: str
) -> RefreshOutcome:
    """Record a refresh that did not run (suspended, or an upstream refresh failed)."""
    now = now_utc()
    REFRESHES.record(
        catalog,
        RefreshRecord(
            uuid.uuid4().hex,
            name,
            RefreshState.SKIPPED,
            None,
            trigger,
            now,
            now,
            0.0,
            {},
            reason=reason,
        ),
    )
    return RefreshOutcome(name, RefreshState.SKIPPED, None, trigger, reason)


def refresh(
    spark: SparkSession,
    catalog: Catalog,
    name: str,
    trigger: str = RefreshTrigger.MANUAL,
    *,
    full: bool = False,
) -> RefreshOutcome:
    """Bring a dynamic table up to date in one commit; a failure is recorded, then raised.

    `full` recomputes even when the changes could be applied (benchmarks compare the two)."""
    trigger = RefreshTrigger(trigger)
    entry = catalog.get(DynamicTableEntry, name)
    if entry.suspended and trigger in (RefreshTrigger.SCHEDULED, RefreshTrigger.UPSTREAM):
        return record_skipped(catalog, name, trigger, "the dynamic table is suspended")
    start, clock = now_utc(), time.monotonic()
    try:
        return _refresh(spark, catalog, entry, trigger, start, clock, full)
    except Exception as error:
        failure = (
            error
            if isinstance(error, LakeError)
            else as_lake_error(error, catalog.relation_locations())
        )
        REFRESHES.record(catalog,
            RefreshRecord(
                uuid.uuid4().hex, name, RefreshState.FAILED, None, trigger, start, now_utc(),
                time.monotonic() - clock, {}, error_message=str(failure),
            )
        )  # fmt: skip
        if failure is error:
            raise
        raise failure from error


def source_read(
    spark: SparkSession,
    name: str,
    relation: StoredRelation,
    previous: Read | None,
    index: int,
) -> SourceRead:
    version = latest_version(spark, relation.location)
    last = previous.of(relation.location) if previous else None
    columns = (
        tuple(c.name for c in relation.columns) if isinstance(relation, DynamicTableEntry) else None
    )
    return SourceRead(name, relation.location, columns, version, last, index, relation.row_count)


def _refresh(
    spark: SparkSession,
    catalog: Catalog,
    entry: DynamicTableEntry,
    trigger: RefreshTrigger,
    start: str,
    clock: float,
    full: bool,
) -> RefreshOutcome:
    phases = Phases()
    previous, fence, rows_before = _reconcile(spark, catalog, entry)
    plan = plan_of(entry, catalog)
    enabled = untracked(catalog, entry)
    for name in enabled:
        enable_change_tracking(spark, catalog, name)
    consumed = previous.sources if previous else {}
    reads = [
        source_read(spark, name, catalog.stored(name), consumed.get(name), index)
        for index, name in enumerate(entry.sources)
    ]
    versions = {read.name: read.version for read in reads}
    if previous is not None and not full and not any(read.changed for read in reads):
        record = RefreshRecord(
            uuid.uuid4().hex, entry.name, RefreshState.SUCCEED, RefreshMode.NO_DATA, trigger,
            start, now_utc(), time.monotonic() - clock, versions, 0, 0,
        )  # fmt: skip
        REFRESHES.record(catalog, record)
        phases.end("plan")
        return _outcome(record, phases)
    sizes = estimate(spark, catalog, reads)
    reason = why_full(
        entry,
        plan,
        initial=previous is None,
        untracked=enabled,
        full=full,
        reads=reads,
        estimate=sizes,
    )
    metadata = RefreshCommit(
        trigger, start, {read.name: Read(read.location, read.version) for read in reads}
    )
    job = Write(
        spark, entry, plan.stateful, plan.hidden, reads, fence, metadata, phases, rows_before
    )
    phases.end("plan")
    if any(plan.all_stages()):
        job, restaged = _staged(job, plan, previous, full)
        reason = reason or restaged
    commit = None
    if reason is None:
        try:
            conf = incremental_conf(spark, compiled(plan, sizes, rows_before))
            with session_conf(spark, conf):
                commit = plan.write(job, full=False)
        except Exception as error:
            if not _feed_gone(error):
                raise
            first = str(error).strip().splitlines()[0][:300]
            reason = f"the change data feed could not be read: {first}"
    if commit is None:
        metadata.mode, metadata.reason = RefreshMode.FULL, reason
        commit = plan.write(job, full=True)
    failpoints.reached(REFRESH_AFTER_COMMIT)
    record = _record_from_commit(entry.name, commit, None)
    record = replace(record, end_time=now_utc(), duration=time.monotonic() - clock)
    REFRESHES.record(catalog, record)
    rows_after = rows_before + (record.rows_inserted or 0) - (record.rows_deleted or 0)
    if plan.hidden != entry.hidden:  # a crash before this only costs the next refresh a FULL one
        entry = catalog.update(
            DynamicTableEntry, entry.name, lambda stored: replace(stored, hidden=plan.hidden)
        )
    catalog.record_table_state(entry, commit.version, rows_after)
    phases.end("record")
    return _outcome(record, phases)


def _staged(
    job: Write, plan: Plan, previous: RefreshCommit | None, full: bool
) -> tuple[Write, str | None]:
    """The stages brought up to date first (see operators.stage), and the refresh's job reading
    them too; why it recomputes when a stage is new to it."""
    consumed = previous.stages if previous else {}
    try:
        staged = write_stages(job, plan, consumed, full)
    except Exception as error:
        if full or not _feed_gone(error):
            raise
        staged = write_stages(job, plan, consumed, full=True)  # a stage's sources' feed is gone
    job.metadata.stages = {read.name: Read(read.location, read.version) for read in staged}
    job.phases.end("stages")
    anew = any(read.previous is None for read in staged)
    reason = "the parts of its query kept in hidden tables are new: read whole" if anew else None
    return replace(job, reads=[*job.reads, *staged]), reason


def _feed_gone(error: Exception) -> bool:
    return any(condition in str(error) for condition in _FEED_GONE)


def _outcome(record: RefreshRecord, phases: Phases | None = None) -> RefreshOutcome:
    return RefreshOutcome(
        record.name,
        record.state,
        record.refresh_mode,
        record.refresh_trigger,
        record.reason,
        record.rows_inserted or 0,
        record.rows_deleted or 0,
        record.source_tables,
        record.duration,
        record.dt_version,
        record.error_message,
        phases.seconds if phases else {},
    )


def _record_from_commit(name: str, commit: Commit, record: RefreshCommit | None) -> RefreshRecord:
    """The history row of a refresh commit, from what the commit itself carries."""
    if record is None:
        decoded = decode(commit.user_metadata, REFRESH_MARKER)
        assert decoded is not None, "a refresh's commit carries its record"
        record = RefreshCommit.from_json(decoded)
    inserted, updated, deleted = row_changes(commit.operation or "", commit.operation_metrics) or (
        0, 0, 0,
    )  # fmt: skip
    if record.replaced_rows is not None:  # every row was replaced (see writing.write_rows)
        inserted, deleted = inserted, record.replaced_rows
    else:
        inserted, deleted = inserted + updated, deleted + updated
    end = commit.timestamp
    end_text = end.isoformat(timespec="milliseconds")
    started = datetime.fromisoformat(record.start)
    duration = (end.replace(tzinfo=started.tzinfo) - started).total_seconds()
    assert record.mode is not None, "a committed refresh has a mode"
    return RefreshRecord(
        record.tag, name, RefreshState.SUCCEED, record.mode, record.trigger, record.start,
        end_text, max(duration, 0.0), record.versions, inserted, deleted, None, record.reason,
        commit.version,
    )  # fmt: skip


def _reconcile(
    spark: SparkSession, catalog: Catalog, entry: DynamicTableEntry
) -> tuple[RefreshCommit | None, Fence, int]:
    """The last refresh committed as of the table's current version, by its record (re-indexed
    if the index missed it), the fence of a refresh that starts from both (it holds against
    every refresh that committed since, whatever else committed too), and the table's rows."""
    ensure_log_intact(entry)
    version = latest_version(spark, entry.location)
    app_id = f"lake-refresh-{Path(entry.location).name}"
    fence, found = fence_at(spark, entry.location, app_id, REFRESH_MARKER, version)
    rows = entry.row_count
    if entry.version != version or rows is None:
        rows = row_count(spark, entry.location, version)
    if found is None:
        return None, fence, rows
    commit, decoded = found
    record = RefreshCommit.from_json(decoded)
    REFRESHES.record(catalog, _record_from_commit(entry.name, commit, record))
    if entry.version != version:
        catalog.record_table_state(entry, version, rows)
    return record, fence, rows
