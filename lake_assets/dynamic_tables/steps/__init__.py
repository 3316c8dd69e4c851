"""A refresh as an ordered tuple of steps over one state (see state.Refreshing), one step a
module: each reads what the steps before it found, and the first that records the refresh ends
it. A new step is its module and one line here."""

from __future__ import annotations

from lake_assets.dynamic_tables.steps.choose_mode import choose_mode
from lake_assets.dynamic_tables.steps.commit import commit
from lake_assets.dynamic_tables.steps.lower import lower
from lake_assets.dynamic_tables.steps.read_sources import read_sources
from lake_assets.dynamic_tables.steps.reconcile import reconcile
from lake_assets.dynamic_tables.steps.record import record
from lake_assets.dynamic_tables.steps.refresh_stages import refresh_stages
from lake_assets.dynamic_tables.steps.state import Refreshing, Step

__all__ = ["STEPS", "Refreshing", "Step"]

STEPS: tuple[Step, ...] = (
    reconcile,
    lower,
    read_sources,
    choose_mode,
    refresh_stages,
    commit,
    record,
)
