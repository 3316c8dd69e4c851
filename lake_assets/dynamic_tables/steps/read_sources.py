"""Third step: each source's version to read (now, or the graph's snapshot: see snapshots) and
as the last refresh read it, change tracking turned on where it is off, the views replaced since;
a refresh with nothing new to read ends here, as NO_DATA."""

from __future__ import annotations

import uuid

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import latest_version
from lake_assets.core.entries import StoredRelation, now_utc
from lake_assets.dynamic_tables.choosing import replaced_views
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import (
    REFRESHES,
    Read,
    RefreshMode,
    RefreshRaced,
    RefreshRecord,
    RefreshState,
)
from lake_assets.dynamic_tables.runtime.sources import SourceRead
from lake_assets.dynamic_tables.snapshots import sources_of
from lake_assets.dynamic_tables.steps.state import Refreshing
from lake_assets.tables.engine import enable_change_tracking
from lake_assets.tables.entry import TableEntry


def read_sources(run: Refreshing) -> None:
    entry, catalog = run.entry, run.catalog
    relations = {name: catalog.stored(name) for name in sources_of(entry, catalog)}
    run.untracked = [name for name, relation in relations.items() if _untracked(relation)]
    for name in run.untracked:
        enable_change_tracking(run.spark, catalog, name)
    consumed = run.previous.sources if run.previous else {}
    pinned = run.pinned or {}
    run.reads = [
        source_read(run.spark, name, relation, consumed.get(name), index, pinned.get(relation.name))
        for index, (name, relation) in enumerate(relations.items())
    ]
    _refuse_going_back(entry.name, run.reads)
    run.replaced = replaced_views(catalog, entry, run.previous.start if run.previous else None)
    if run.previous is None or run.full or run.replaced or any(read.changed for read in run.reads):
        return
    versions = {read.name: read.version for read in run.reads}
    bases = {name: read.version for name, read in run.previous.bases.items()}
    run.record = RefreshRecord(
        uuid.uuid4().hex, entry.name, RefreshState.SUCCEED, RefreshMode.NO_DATA, run.trigger,
        run.start, now_utc(), run.elapsed(), versions, 0, 0, base_tables=bases, lag_seconds=0.0,
    )  # fmt: skip
    REFRESHES.record(catalog, run.record)
    run.phases.end("plan")


def _refuse_going_back(name: str, reads: list[SourceRead]) -> None:
    """A snapshot older than what the last refresh read: another refresh committed since."""
    for read in reads:
        if read.previous is not None and read.version < read.previous:
            raise RefreshRaced(
                f"another refresh of dynamic table {name} read {read.name} at version "
                f"{read.previous}, after the snapshot this one reads ({read.version})",
                f"refresh {name} again: it starts from what the other refresh committed",
            )


def untracked(catalog: Catalog, entry: DynamicTableEntry) -> list[str]:
    """The tables the dynamic table reads whose change tracking is off."""
    return [name for name in sources_of(entry, catalog) if _untracked(catalog.relation(name))]


def _untracked(relation: object) -> bool:
    return isinstance(relation, TableEntry) and not relation.change_tracking


def source_read(
    spark: SparkSession,
    name: str,
    relation: StoredRelation,
    previous: Read | None,
    index: int,
    version: int | None = None,
) -> SourceRead:
    """A source as read at `version` (None: now), and the version the last refresh read of it
    (`previous`)."""
    if version is None:
        version = latest_version(spark, relation.location)
    last = previous.of(relation.location) if previous else None
    columns = (
        tuple(c.name for c in relation.columns) if isinstance(relation, DynamicTableEntry) else None
    )
    return SourceRead(name, relation.location, columns, version, last, index, relation.row_count)
