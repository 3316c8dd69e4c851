"""Last step: the refresh's history row, from its commit, and the catalog's record of the table
(its hidden columns, version and rows). A crash before this loses nothing: the next refresh
re-indexes the commit (see reconcile), and a stale hidden-columns record only costs it a FULL."""

from __future__ import annotations

from dataclasses import replace

from lake_assets.core.entries import now_utc
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESHES, committed
from lake_assets.dynamic_tables.steps.state import Refreshing


def record(run: Refreshing) -> None:
    done = replace(
        committed(run.entry.name, run.commit), end_time=now_utc(), duration=run.elapsed()
    )
    REFRESHES.record(run.catalog, done)
    rows_after = run.rows_before + (done.rows_inserted or 0) - (done.rows_deleted or 0)
    entry, hidden = run.entry, run.plan.hidden
    if hidden != entry.hidden:
        entry = run.catalog.update(
            DynamicTableEntry, entry.name, lambda stored: replace(stored, hidden=hidden)
        )
    run.catalog.record_table_state(entry, run.commit.version, rows_after)
    run.phases.end("record")
    run.record = done
