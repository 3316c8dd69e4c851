"""Fourth step: whether the refresh applies its sources' changes or recomputes, and why (see
choosing.why_full), and the write that commits it with its record."""

from __future__ import annotations

from lake_assets.dynamic_tables.choosing import estimate, schema_changes, why_full
from lake_assets.dynamic_tables.lags import behind_since
from lake_assets.dynamic_tables.refreshes import Read, RefreshCommit
from lake_assets.dynamic_tables.runtime.writing import Write
from lake_assets.dynamic_tables.snapshots import bases_read
from lake_assets.dynamic_tables.steps.state import Refreshing


def choose_mode(run: Refreshing) -> None:
    run.estimate = estimate(run.spark, run.catalog, run.reads)
    run.reason = why_full(
        run.entry,
        run.plan,
        initial=run.previous is None,
        untracked=run.untracked,
        full=run.full,
        reads=run.reads,
        estimate=run.estimate,
        schema_changes=schema_changes(run.catalog, run.reads),
        views=run.replaced,
    )
    reads = {read.name: Read(read.location, read.version) for read in run.reads}
    bases = bases_read(run.spark, run.catalog, run.reads)
    since = behind_since(run.previous.bases if run.previous else {}, bases)
    metadata = RefreshCommit(
        run.trigger,
        run.start,
        reads,
        bases=bases,
        behind_since=since.isoformat(timespec="milliseconds") if since else None,
    )
    plan = run.plan
    run.job = Write(
        run.spark, run.entry, plan.stateful, plan.hidden, run.reads, run.fence, metadata,
        run.phases, run.rows_before, run.written,
    )  # fmt: skip
    run.phases.end("plan")
