"""First step: the last refresh committed as of the table's current version, by its record
(re-indexed if the history missed it), and the fence a refresh starting from both commits under:
it holds against every refresh that committed since, whatever else committed too."""

from __future__ import annotations

from pathlib import Path

from lake_assets.core.commits import fence_at
from lake_assets.core.delta import latest_version, row_count
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.dynamic_tables.refreshes import REFRESH_MARKER, REFRESHES, RefreshCommit, committed
from lake_assets.dynamic_tables.steps.state import Refreshing


def reconcile(run: Refreshing) -> None:
    entry, spark = run.entry, run.spark
    ensure_log_intact(entry)
    version = latest_version(spark, entry.location)
    rows = entry.row_count
    if entry.version != version or rows is None:
        rows = row_count(spark, entry.location, version)
    app_id = f"lake-refresh-{Path(entry.location).name}"
    run.fence, found = fence_at(spark, entry.location, app_id, REFRESH_MARKER, version)
    run.previous, run.rows_before = None, rows
    if found is None:
        return
    commit, decoded = found
    run.previous = RefreshCommit.from_json(decoded)
    REFRESHES.record(run.catalog, committed(entry.name, commit, run.previous))
    if entry.version != version:
        run.catalog.record_table_state(entry, version, rows)
