"""The one door into a dynamic table's refresh: incremental from its sources' change data feed,
or FULL, in the steps of steps.STEPS, as of one snapshot of the base tables under it (the dynamic
tables it reads brought to it first: see snapshots).

A refresh is one Delta commit whose userMetadata carries the source versions it consumed, so the
next refresh starts exactly where the last committed one stopped; the SQLite refresh history is
an index rebuilt from those commits whenever it lags (a crash between the commit and the index
update loses no record and applies no change twice)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import latest_version
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.spark_errors import as_lake_error
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import (
    REFRESHES,
    Read,
    RefreshRaced,
    RefreshRecord,
    RefreshState,
    RefreshTrigger,
)
from lake_assets.dynamic_tables.runtime.writing import Phases
from lake_assets.dynamic_tables.snapshots import Graph, behind, graph_of, newest, reflected
from lake_assets.dynamic_tables.steps import STEPS, Refreshing


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
    # How far behind its base tables it had fallen when the refresh caught it up (see lags).
    lag_seconds: float | None = None

    def summary(self) -> str:
        if self.state != RefreshState.SUCCEED:
            return f"{self.state}: {self.error or self.reason}"
        why = f" ({self.reason})" if self.reason else ""
        at = f"; {self.name} is at version {self.version}" if self.version is not None else ""
        return (
            f"REFRESH {self.mode}{why}: {self.rows_inserted} rows inserted, "
            f"{self.rows_deleted} deleted in {self.duration:.2f} s{at}"
        )


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


# How many times a refresh plans again when another refresh commits under it (of the table, or
# of one it reads, past its snapshot), before it fails.
_PLANS = 4
# Triggers that skip a refresh, rather than fail it, when it cannot reflect the newest snapshot.
_AUTOMATIC = (RefreshTrigger.SCHEDULED, RefreshTrigger.UPSTREAM)

# Told of each refresh an upstream dynamic table committed for a refresh downstream of it: that
# commit is an event of its asset too.
Refreshed = Callable[[RefreshOutcome], None]


class UpstreamSuspended(LakeError):
    """A dynamic table read is suspended and does not reflect the snapshot a refresh reads."""


def refresh(
    spark: SparkSession,
    catalog: Catalog,
    name: str,
    trigger: str = RefreshTrigger.MANUAL,
    *,
    full: bool = False,
    upstream: Refreshed | None = None,
) -> RefreshOutcome:
    """Bring a dynamic table up to date in one commit, step by step (see steps.STEPS), as of one
    snapshot of the base tables under it: the dynamic tables it reads that do not reflect that
    snapshot are refreshed to it first (DOWNSTREAM, each told to `upstream`). A failure is
    recorded, then raised. `full` recomputes even when the changes could be applied."""
    trigger = RefreshTrigger(trigger)
    entry = catalog.get(DynamicTableEntry, name)
    if entry.suspended and trigger in _AUTOMATIC:
        return record_skipped(catalog, name, trigger, "the dynamic table is suspended")
    graph = graph_of(catalog, entry.name)
    for plans_left in reversed(range(_PLANS)):
        run = Refreshing(spark, catalog, entry, trigger, full)
        try:
            run.pinned = _snapshot(spark, catalog, graph, upstream) if graph.upstream else None
            return _steps(run)
        except Exception as error:
            if isinstance(error, RefreshRaced) and plans_left:
                continue
            if isinstance(error, UpstreamSuspended) and trigger in _AUTOMATIC:
                return record_skipped(catalog, name, trigger, error.what)
            failure = _recorded_failure(run, error)
            if failure is error:
                raise
            raise failure from error
    raise AssertionError("the last plan returns or raises")


def _snapshot(
    spark: SparkSession, catalog: Catalog, graph: Graph, upstream: Refreshed | None
) -> dict[str, int]:
    """The version of each relation the root of `graph` reads: its base tables' newest, and
    each dynamic table upstream brought to reflect exactly those (refreshed if behind)."""
    pins = newest(spark, catalog, graph.bases[graph.root])
    at = {name: read.version for name, read in pins.items()}
    for name in graph.upstream:
        at[name] = _brought_to(spark, catalog, graph, name, pins, at, upstream)
    return at


def _brought_to(
    spark: SparkSession,
    catalog: Catalog,
    graph: Graph,
    name: str,
    pins: dict[str, Read],
    at: dict[str, int],
    upstream: Refreshed | None,
) -> int:
    """The version of upstream dynamic table `name` that reflects the snapshot `pins`."""
    entry = catalog.get(DynamicTableEntry, name)
    version = latest_version(spark, entry.location)
    wanted = {base: pins[base] for base in graph.bases[name]}
    state = behind(reflected(spark, entry.location, version), wanted)
    if state is None:
        raise RefreshRaced(
            f"dynamic table {name} was refreshed past the snapshot {graph.root} reads",
            f"refresh {graph.root} again",
        )
    if not state:
        return version
    if entry.suspended:
        raise UpstreamSuspended(
            f"dynamic table {name}, which {graph.root} reads, is suspended and does not reflect "
            f"the newest versions of {', '.join(sorted(wanted))}",
            f"resume it (ALTER DYNAMIC TABLE {name} RESUME) or refresh it by hand first",
        )
    run = Refreshing(spark, catalog, entry, RefreshTrigger.DOWNSTREAM)
    run.pinned = {source: at[source] for source in graph.reads[name]}
    try:
        outcome = _steps(run)
    except RefreshRaced:
        raise
    except Exception as error:
        failure = _recorded_failure(run, error)
        raise LakeError(
            f"dynamic table {graph.root} reads {name}, whose refresh failed: {failure.what}",
            failure.fix,
        ) from error
    if outcome.version is None:  # NO_DATA: the version it started from reflects the snapshot
        return run.fence.version
    if upstream is not None:
        upstream(outcome)
    return outcome.version


def _steps(run: Refreshing) -> RefreshOutcome:
    for step in STEPS:
        step(run)
        if run.record is not None:
            return _outcome(run.record, run.phases)
    raise AssertionError("the last step records the refresh")


def _recorded_failure(run: Refreshing, error: Exception) -> LakeError:
    """The failure as one clear error, recorded in the refresh history."""
    failure = (
        error
        if isinstance(error, LakeError)
        else as_lake_error(error, run.catalog.relation_locations())
    )
    REFRESHES.record(run.catalog,
        RefreshRecord(
            uuid.uuid4().hex, run.entry.name, RefreshState.FAILED, None, run.trigger, run.start,
            now_utc(), run.elapsed(), {}, error_message=str(failure),
        )
    )  # fmt: skip
    return failure


def _outcome(record: RefreshRecord, phases: Phases) -> RefreshOutcome:
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
        phases.seconds,
        record.lag_seconds,
    )
