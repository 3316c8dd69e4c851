"""The one door into a dynamic table's refresh: incremental from its sources' change data feed,
or FULL, in the steps of steps.STEPS.

A refresh is one Delta commit whose userMetadata carries the source versions it consumed, so the
next refresh starts exactly where the last committed one stopped; the SQLite refresh history is
an index rebuilt from those commits whenever it lags (a crash between the commit and the index
update loses no record and applies no change twice)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.spark_errors import as_lake_error
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import (
    REFRESHES,
    RefreshRecord,
    RefreshState,
    RefreshTrigger,
)
from lake_assets.dynamic_tables.runtime.writing import Phases
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


def refresh(
    spark: SparkSession,
    catalog: Catalog,
    name: str,
    trigger: str = RefreshTrigger.MANUAL,
    *,
    full: bool = False,
) -> RefreshOutcome:
    """Bring a dynamic table up to date in one commit, step by step (see steps.STEPS); a
    failure is recorded, then raised. `full` recomputes even when the changes could be applied
    (benchmarks compare the two)."""
    trigger = RefreshTrigger(trigger)
    entry = catalog.get(DynamicTableEntry, name)
    if entry.suspended and trigger in (RefreshTrigger.SCHEDULED, RefreshTrigger.UPSTREAM):
        return record_skipped(catalog, name, trigger, "the dynamic table is suspended")
    run = Refreshing(spark, catalog, entry, trigger, full)
    try:
        for step in STEPS:
            step(run)
            if run.record is not None:
                return _outcome(run.record, run.phases)
    except Exception as error:
        failure = (
            error
            if isinstance(error, LakeError)
            else as_lake_error(error, catalog.relation_locations())
        )
        REFRESHES.record(catalog,
            RefreshRecord(
                uuid.uuid4().hex, name, RefreshState.FAILED, None, trigger, run.start, now_utc(),
                run.elapsed(), {}, error_message=str(failure),
            )
        )  # fmt: skip
        if failure is error:
            raise
        raise failure from error
    raise AssertionError("the last step records the refresh")


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
    )
