"""How far behind its base tables a dynamic table is, its lag: now minus the time of the oldest
base commit it does not reflect (none: 0). Read from the Delta logs without Spark, so that the
lag sensor, DESC and each refresh's record tell the same figure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import commits_from, history
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESHES, Read
from lake_assets.dynamic_tables.snapshots import graph_of, reflected

# How far back DESC looks for the longest lag.
LAG_WINDOW = timedelta(days=1)


def behind_since(held: Mapping[str, Read], upto: Mapping[str, Read]) -> datetime | None:
    """The time (UTC) of the oldest commit to a base table after the version `held` reflects, up
    to the version in `upto`; None when `held` reflects all of `upto`. A base table `held` does
    not know (new to the graph, or replaced) is behind since its first commit."""
    oldest: datetime | None = None
    for name, read in upto.items():
        known = held.get(name)
        start = known.version + 1 if known is not None and known.location == read.location else 0
        first = next(commits_from(None, read.location, start), None)
        if first is not None and first.version <= read.version:
            stamp = first.timestamp.replace(tzinfo=UTC)
            oldest = stamp if oldest is None else min(oldest, stamp)
    return oldest


def current_lag(catalog: Catalog, entry: DynamicTableEntry, now: datetime) -> float:
    """The table's lag now, in seconds."""
    latest = history(None, entry.location, 1)[0].version
    bases = {
        name: Read(where, history(None, where, 1)[0].version)
        for name in graph_of(catalog, entry.name).bases[entry.name]
        if (where := catalog.stored(name).location)
    }
    since = behind_since(reflected(None, entry.location, latest), bases)
    return max((now - since).total_seconds(), 0.0) if since is not None else 0.0


def longest_lag(catalog: Catalog, entry: DynamicTableEntry, now: datetime) -> float:
    """The longest lag over the last LAG_WINDOW: the lag now, or one a refresh since ended."""
    start = (now - LAG_WINDOW).isoformat()
    ended = [
        record.lag_seconds
        for record in REFRESHES.newest_first(catalog, entry.name)
        if record.lag_seconds is not None and record.end_time >= start
    ]
    return max([current_lag(catalog, entry, now), *ended])
