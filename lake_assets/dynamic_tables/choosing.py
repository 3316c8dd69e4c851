"""REFRESH_MODE per refresh: FULL always recomputes; AUTO recomputes when, on large sources,
the change is a large share of their rows or applying it reads about as many rows as
recomputing (estimated from their Delta logs, no Spark job), and applies the changes otherwise;
INCREMENTAL always applies them (CREATE refused what it cannot maintain)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.dynamic_tables.entry import DynamicTableEntry, RefreshModeChoice
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.runtime.sources import SourceRead, commit_changes
from lake_assets.views.reading import views_read

# AUTO recomputes once the rows changed since the last refresh reach this share of the sources'
# rows: reading and folding that many changes costs about what reading the sources whole does.
AUTO_FULL_SHARE = 0.2
# ... and only sources this large: smaller ones keep applying their changes, although a FULL
# refresh of them measured 3-6 times cheaper (bench/tpch.py at scales 0.01 and 0.1).
AUTO_MIN_ROWS = 100_000
# An incremental refresh that reads fewer rows than this runs interpreted: compiling Spark's
# generated code for each of its statements costs more than it saves (bench/summary_refresh.py:
# 2.3 s compiled, 1.4 s interpreted after a 5-row load on 1M rows), while a FULL aggregate of 1M
# rows takes 1.3 s longer interpreted.
COMPILED_MIN_ROWS = 500_000


@dataclass(frozen=True)
class Estimate:
    """The sources' rows and the rows changed in them since the last refresh."""

    changed: int
    rows: int
    # Each changed source's changed rows and rows.
    sources: tuple[tuple[int, int], ...] = ()

    @property
    def incremental_reads(self) -> int:
        """The rows applying the change reads, roughly: each changed source's change joined
        with the other sources whole (the delta rule); of one source, its change alone."""
        return sum(change + self.rows - rows for change, rows in self.sources)


def changed_rows(spark: SparkSession, read: SourceRead) -> int | None:
    """Rows inserted, deleted or updated (counted twice) in the source since the last refresh,
    from its commits' metrics; None when a commit does not say."""
    changes = commit_changes(spark, read)
    if changes is None:
        return None
    return sum(inserted + 2 * updated + deleted for inserted, updated, deleted in changes)


def estimate(spark: SparkSession, catalog: Catalog, reads: list[SourceRead]) -> Estimate | None:
    """From the sources' Delta logs and the catalog (no Spark job); None when a commit or the
    catalog does not say."""
    changed = rows = 0
    sources = []
    for read in reads:
        count = catalog.stored(read.name).row_count
        change = changed_rows(spark, read) if read.changed else 0
        if count is None or change is None:
            return None
        changed, rows = changed + change, rows + count
        if read.changed:
            sources.append((change, count))
    return Estimate(changed, rows, tuple(sources))


def compiled(plan: Plan, estimate: Estimate | None, table_rows: int) -> bool:
    """Whether an incremental refresh reads enough rows for Spark's generated code to pay: a
    root that reads only changes reads them and the table, any other its sources."""
    if estimate is None:
        return True
    only_changes = plan.root.reads_only_changes
    read = estimate.changed + (table_rows if only_changes else estimate.rows)
    return read >= COMPILED_MIN_ROWS


def auto_rule() -> str:
    """AUTO's rule, as EXPLAIN states it (see _auto_reason)."""
    return (
        f"FULL when, on sources of {AUTO_MIN_ROWS:,} rows or more, the rows changed reach "
        f"{AUTO_FULL_SHARE:.0%} of theirs or applying the changes reads as many rows as "
        "recomputing"
    )


def _auto_reason(entry: DynamicTableEntry, estimate: Estimate | None) -> str | None:
    """Why a refresh that could apply its sources' changes recomputes instead, or None."""
    if entry.refresh_mode is not RefreshModeChoice.AUTO or estimate is None:
        return None  # no estimate: the changes are applied
    changed, rows, reads = estimate.changed, estimate.rows, estimate.incremental_reads
    if rows < AUTO_MIN_ROWS:
        return None
    if changed >= AUTO_FULL_SHARE * rows:
        return (
            f"AUTO: {changed} rows changed of {rows} in the sources ({changed / rows:.0%}), at "
            f"least {AUTO_FULL_SHARE:.0%}: recomputing costs less than applying the changes"
        )
    if reads >= rows:
        return (
            f"AUTO: applying the changes reads about {reads} rows (each changed source's change "
            f"with the other sources whole), recomputing {rows}: recomputing costs less"
        )
    return None


def why_full(
    entry: DynamicTableEntry,
    plan: Plan,
    *,
    initial: bool,
    untracked: list[str],
    full: bool = False,
    reads: list[SourceRead] | None = None,
    estimate: Estimate | None = None,
    schema_changes: tuple[str, ...] = (),
    views: tuple[str, ...] = (),
) -> str | None:
    """Why a refresh recomputes instead of applying its sources' changes, or None: of the next
    refresh (DESC), without `reads`, before AUTO weighs the changes it finds."""
    if plan.reason:
        return plan.reason
    if entry.refresh_mode is RefreshModeChoice.FULL:
        return "REFRESH_MODE = FULL"
    if plan.hidden != entry.hidden:
        return "its state columns were laid out for another plan: recomputed in this plan's"
    if full:
        return "a full refresh was asked for"
    if initial:
        return "initial refresh"
    if views:
        return f"view {', '.join(views)} was replaced since the last refresh"
    if untracked:
        return f"change tracking of {', '.join(untracked)} was off (the refresh turns it on)"
    replaced = [read.name for read in reads or () if read.previous is None]
    if replaced:
        return f"{', '.join(replaced)} was replaced since the last refresh"
    if schema_changes:
        return f"{'; '.join(schema_changes)} since the last refresh"
    return _auto_reason(entry, estimate) if reads is not None else None


def replaced_views(
    catalog: Catalog, entry: DynamicTableEntry, since: str | None
) -> tuple[str, ...]:
    """The views the query reads (directly or through views) replaced after `since`, the start
    of the last committed refresh: what the table holds was computed from their old queries."""
    views = views_read(entry.sources, catalog.find_relation)
    return tuple(view.name for view in views if since is not None and view.created_at > since)


def schema_changes(catalog: Catalog, reads: list[SourceRead]) -> tuple[str, ...]:
    """The sources whose columns changed since the refresh before read them, in words: their
    changes are not read across that (a refresh recomputes once)."""
    changed = []
    for read in reads:
        source = catalog.stored(read.name)
        if read.previous is not None and (source.schema_version or -1) > read.previous:
            changed.append(
                f"{read.name}'s columns changed at version {source.schema_version} "
                f"({source.schema_change})"
            )
    return tuple(changed)
