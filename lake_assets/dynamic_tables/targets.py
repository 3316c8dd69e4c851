"""TARGET_LAG declarations and the rule they keep: no table is left without refreshes. A
DOWNSTREAM table refreshes only when a dynamic table reading it does, so one that nothing reads,
or that only tables refreshing on their sources' changes read (they would never see it change),
is refused; ALTER … SET TARGET_LAG is here too."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.dynamic_tables.entry import DOWNSTREAM, DynamicTableEntry, TargetLag
from lake_assets.dynamic_tables.grammar import AlterTargetLag
from lake_assets.dynamic_tables.snapshots import sources_of

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def alter_target_lag(session: Context, stmt: AlterTargetLag) -> Result:
    """SET TARGET_LAG: it replaces a REFRESH INTERVAL, if the table had one."""
    catalog, lag = session.catalog, stmt.target_lag
    catalog.get(DynamicTableEntry, stmt.name)
    if lag == DOWNSTREAM:
        _refuse_unread(catalog, stmt.name)
    catalog.update(
        DynamicTableEntry,
        stmt.name,
        lambda entry: replace(
            entry,
            target_lag_seconds=lag.seconds,
            lag_downstream=lag == DOWNSTREAM,
            refresh_interval_seconds=None,
        ),
    )
    return Result.status(f"dynamic table {stmt.name} has TARGET_LAG = {lag.text}")


def refuse_stuck(
    catalog: Catalog,
    name: str,
    lag: TargetLag | None,
    interval: int | None,
    relations: tuple[str, ...],
) -> None:
    """At CREATE: a DOWNSTREAM table with no reader (it has none yet, unless replaced), or a table
    refreshing on its sources' changes (no lag, no interval) that reads a DOWNSTREAM one."""
    if lag == DOWNSTREAM:
        _refuse_unread(catalog, name)
    if lag is not None or interval is not None:
        return
    for relation in relations:
        source = catalog.find(DynamicTableEntry, relation)
        if source is not None and source.lag_downstream:
            raise LakeError(
                f"dynamic table {name} would refresh when its sources change, but {source.name} "
                "(TARGET_LAG = DOWNSTREAM) changes only when a table reading it refreshes",
                f"give {name} a TARGET_LAG or a REFRESH INTERVAL",
            )


def _refuse_unread(catalog: Catalog, name: str) -> None:
    readers = [
        entry
        for entry in catalog.entries(DynamicTableEntry)
        if name.lower() in map(str.lower, sources_of(entry, catalog))
    ]
    if not readers:
        raise LakeError(
            f"TARGET_LAG = DOWNSTREAM: no dynamic table reads {name}, so it would never refresh",
            f"give it a lag (TARGET_LAG = '5 minutes'), create the dynamic tables that read it, "
            f"then ALTER DYNAMIC TABLE {name} SET TARGET_LAG = DOWNSTREAM",
        )
    eager = [r.name for r in readers if r.target_lag is None and not r.refresh_interval_seconds]
    if eager:
        raise LakeError(
            f"TARGET_LAG = DOWNSTREAM: dynamic table {eager[0]} reads {name} and refreshes when "
            f"its sources change, which {name} would then never do",
            f"give {eager[0]} a TARGET_LAG or a REFRESH INTERVAL first",
        )
