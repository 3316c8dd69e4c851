"""Sixth step: the one commit of the refresh, applying the changes when it can and recomputing
otherwise (or when a source's change data feed turns out to be gone)."""

from __future__ import annotations

from lake_assets.core import failpoints
from lake_assets.core.delta import Commit, session_conf
from lake_assets.dynamic_tables.choosing import compiled
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.dynamic_tables.runtime.sources import incremental_conf
from lake_assets.dynamic_tables.steps.state import Refreshing, feed_gone

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
REFRESH_AFTER_COMMIT = "refresh-after-commit"


def commit(run: Refreshing) -> None:
    done = _applied(run) if run.reason is None else None
    if done is None:
        run.job.metadata.mode, run.job.metadata.reason = RefreshMode.FULL, run.reason
        done = run.plan.write(run.job, full=True)
    run.commit = done
    failpoints.reached(REFRESH_AFTER_COMMIT)


def _applied(run: Refreshing) -> Commit | None:
    """The commit of the changes applied, or None (with the reason) when a feed is gone."""
    try:
        conf = incremental_conf(run.spark, compiled(run.plan, run.estimate, run.rows_before))
        with session_conf(run.spark, conf):
            return run.plan.write(run.job, full=False)
    except Exception as error:
        if not feed_gone(error):
            raise
        first = str(error).strip().splitlines()[0][:300]
        run.reason = f"the change data feed could not be read: {first}"
        return None
