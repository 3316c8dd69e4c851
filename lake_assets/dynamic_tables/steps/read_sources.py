"""Third step: each source's version now and as the last refresh read it, change tracking turned
on where it is off, the views replaced since; a refresh with nothing new to read ends here, as
NO_DATA."""

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
    RefreshRecord,
    RefreshState,
)
from lake_assets.dynamic_tables.runtime.sources import SourceRead
from lake_assets.dynamic_tables.steps.lower import sources_of
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
    run.reads = [
        source_read(run.spark, name, relation, consumed.get(name), index)
        for index, (name, relation) in enumerate(relations.items())
    ]
    run.replaced = replaced_views(catalog, entry, run.previous.start if run.previous else None)
    if run.previous is None or run.full or run.replaced or any(read.changed for read in run.reads):
        return
    versions = {read.name: read.version for read in run.reads}
    run.record = RefreshRecord(
        uuid.uuid4().hex, entry.name, RefreshState.SUCCEED, RefreshMode.NO_DATA, run.trigger,
        run.start, now_utc(), run.elapsed(), versions, 0, 0,
    )  # fmt: skip
    REFRESHES.record(catalog, run.record)
    run.phases.end("plan")


def untracked(catalog: Catalog, entry: DynamicTableEntry) -> list[str]:
    """The tables the dynamic table reads whose change tracking is off."""
    return [name for name in sources_of(entry, catalog) if _untracked(catalog.relation(name))]


def _untracked(relation: object) -> bool:
    return isinstance(relation, TableEntry) and not relation.change_tracking


def source_read(
    spark: SparkSession, name: str, relation: StoredRelation, previous: Read | None, index: int
) -> SourceRead:
    """A source as read now, and the version the last refresh read of it (`previous`)."""
    version = latest_version(spark, relation.location)
    last = previous.of(relation.location) if previous else None
    columns = (
        tuple(c.name for c in relation.columns) if isinstance(relation, DynamicTableEntry) else None
    )
    return SourceRead(name, relation.location, columns, version, last, index, relation.row_count)
