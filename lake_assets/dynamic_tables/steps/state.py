"""What one refresh finds out as it goes: each step (see steps.STEPS) reads what the steps before
it found and adds its own, so a step's inputs are named fields, not arguments threaded by hand."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from sqlglot import exp

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import Fence
from lake_assets.core.delta import Commit
from lake_assets.core.entries import now_utc
from lake_assets.dynamic_tables.choosing import Estimate
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.refreshes import RefreshCommit, RefreshRecord, RefreshTrigger
from lake_assets.dynamic_tables.runtime.sources import SourceRead
from lake_assets.dynamic_tables.runtime.writing import Phases, Write

# Delta's error conditions when a change data feed cannot be read for the versions asked for.
_FEED_GONE = ("DELTA_MISSING_CHANGE_DATA", "DELTA_CHANGE_TABLE_FEED_DISABLED", "DELTA_CHANGE_DATA")


@dataclass
class Refreshing:
    """One refresh of `entry`. The fields after `phases` are set by the steps, in their order;
    once a step sets `record`, the refresh is over."""

    spark: SparkSession
    catalog: Catalog
    entry: DynamicTableEntry
    trigger: RefreshTrigger
    full: bool = False
    # The version of each relation to read (by name), when the refresh reads one snapshot of a
    # graph (see snapshots); None reads each as it is now.
    pinned: Mapping[str, int] | None = None
    start: str = field(default_factory=now_utc)
    clock: float = field(default_factory=time.monotonic)
    phases: Phases = field(default_factory=Phases)
    # reconcile: the last refresh committed, the fence this one commits under, the table's rows.
    previous: RefreshCommit | None = field(init=False)
    fence: Fence = field(init=False)
    rows_before: int = field(init=False)
    # lower: the plan of the query, and the query as written when DROP ROW expectations filter
    # it (see expected).
    plan: Plan = field(init=False)
    written: exp.Expr | None = field(init=False)
    # read_sources: the sources whose change tracking it turned on, each source's read, and the
    # views it reads that were replaced since the last refresh.
    untracked: list[str] = field(init=False)
    reads: list[SourceRead] = field(init=False)
    replaced: tuple[str, ...] = field(init=False)
    # choose_mode: the changes' size, why it recomputes (None: it applies the changes), its write.
    estimate: Estimate | None = field(init=False)
    reason: str | None = field(init=False)
    job: Write = field(init=False)
    # commit: the commit it made.
    commit: Commit = field(init=False)
    record: RefreshRecord | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.clock


Step = Callable[[Refreshing], None]


def feed_gone(error: Exception) -> bool:
    """Whether a read failed because a source's change data feed is gone for the versions asked."""
    return any(condition in str(error) for condition in _FEED_GONE)
