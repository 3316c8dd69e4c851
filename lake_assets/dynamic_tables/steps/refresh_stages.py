"""Fifth step: the parts of the query kept in hidden tables brought up to date first (see
operators.stage), and the refresh's write reading them too; a stage new to the refresh makes it
recompute."""

from __future__ import annotations

from dataclasses import replace

from lake_assets.dynamic_tables.operators.stage import write_stages
from lake_assets.dynamic_tables.refreshes import Read
from lake_assets.dynamic_tables.steps.state import Refreshing, feed_gone


def refresh_stages(run: Refreshing) -> None:
    if not any(run.plan.all_stages()):
        return
    consumed = run.previous.stages if run.previous else {}
    try:
        staged = write_stages(run.job, run.plan, consumed, run.full)
    except Exception as error:
        if run.full or not feed_gone(error):
            raise
        staged = write_stages(run.job, run.plan, consumed, full=True)  # a stage's feed is gone
    run.job.metadata.stages = {read.name: Read(read.location, read.version) for read in staged}
    run.phases.end("stages")
    if run.reason is None and any(read.previous is None for read in staged):
        run.reason = "the parts of its query kept in hidden tables are new: read whole"
    run.job = replace(run.job, reads=[*run.job.reads, *staged])
