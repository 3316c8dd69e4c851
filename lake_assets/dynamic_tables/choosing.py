"""REFRESH_MODE per refresh: FULL always recomputes; AUTO recomputes when the sources' change is
a large share of their rows (and they are large), estimated from their Delta logs (no Spark
job), and applies the changes otherwise; INCREMENTAL always applies them (CREATE refused what it
cannot maintain)."""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import commits_from, row_changes
from lake_assets.dynamic_tables.entry import DynamicTableEntry, RefreshModeChoice
from lake_assets.dynamic_tables.incremental import SourceRead
from lake_assets.dynamic_tables.plan import Plan

# AUTO recomputes once the rows changed since the last refresh reach this share of the sources'
# rows: reading and folding that many changes costs about what reading the sources whole does.
AUTO_FULL_SHARE = 0.2
# ... and only sources this large: under it both refreshes take about as long, and applying the
# changes writes only the rows that changed.
AUTO_MIN_ROWS = 100_000


def changed_rows(spark: SparkSession, read: SourceRead) -> int | None:
    """Rows inserted, deleted or updated (counted twice) in the source since the last refresh,
    from its commits' metrics; None when a commit does not say."""
    total = 0
    for commit in commits_from(spark, read.location, int(read.previous or 0) + 1):
        if commit.version > read.version:
            break
        changes = row_changes(commit.operation or "", commit.operation_metrics)
        if changes is None:
            return None
        inserted, updated, deleted = changes
        total += inserted + 2 * updated + deleted
    return total


def _auto_reason(
    spark: SparkSession, catalog: Catalog, entry: DynamicTableEntry, reads: Iterable[SourceRead]
) -> str | None:
    """Why a refresh that could apply its sources' changes recomputes instead, or None."""
    if entry.refresh_mode is RefreshModeChoice.FULL:
        return "REFRESH_MODE = FULL"
    if entry.refresh_mode is not RefreshModeChoice.AUTO:
        return None
    changed = rows = 0
    for read in reads:
        count = catalog.stored(read.name).row_count
        change = changed_rows(spark, read) if read.changed else 0
        if count is None or change is None:
            return None  # no estimate: the changes are applied
        changed, rows = changed + change, rows + count
    if rows < AUTO_MIN_ROWS or changed < AUTO_FULL_SHARE * rows:
        return None
    return (
        f"AUTO: {changed} rows changed of {rows} in the sources ({changed / rows:.0%}), at least "
        f"{AUTO_FULL_SHARE:.0%}: recomputing costs less than applying the changes"
    )


def why_full(
    spark: SparkSession,
    catalog: Catalog,
    entry: DynamicTableEntry,
    plan: Plan,
    reads: list[SourceRead],
    initial: bool,
    enabled: list[str],
    full: bool,
) -> str | None:
    """Why this refresh recomputes instead of applying its sources' changes, or None."""
    if plan.reason:
        return plan.reason
    if plan.hidden != entry.hidden:
        return "its state columns were laid out for another plan: recomputed in this plan's"
    if full:
        return "a full refresh was asked for"
    if initial:
        return "initial refresh"
    if enabled:
        return f"change tracking was just turned on for {', '.join(enabled)}"
    replaced = [read.name for read in reads if read.previous is None]
    if replaced:
        return f"{', '.join(replaced)} was replaced since the last refresh"
    return _auto_reason(spark, catalog, entry, reads)
