"""One snapshot across a graph of dynamic tables: which base tables (tables, not dynamic tables)
each dynamic table reflects through those it reads, the versions of them a refresh commit
reflects, and whether an upstream dynamic table reflects the versions a refresh downstream reads.
Analyses only: refresh.py brings the graph to one snapshot with them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import newest_record
from lake_assets.core.delta import latest_version
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESH_MARKER, Read, RefreshCommit
from lake_assets.dynamic_tables.runtime.sources import SourceRead
from lake_assets.views.reading import base_relations


def sources_of(entry: DynamicTableEntry, catalog: Catalog) -> tuple[str, ...]:
    """The tables and dynamic tables a refresh reads (its upstream assets): its sources, each
    view among them replaced by the relations it reads in the end."""
    return base_relations(entry.sources, catalog.find_relation)


@dataclass(frozen=True)
class Graph:
    """A dynamic table (`root`) and the dynamic tables upstream of it, each after those it reads
    (`order`, the root last), with the relations each reads and the base tables under each."""

    order: tuple[str, ...]
    reads: Mapping[str, tuple[str, ...]]
    bases: Mapping[str, frozenset[str]]

    @property
    def root(self) -> str:
        return self.order[-1]

    @property
    def upstream(self) -> tuple[str, ...]:
        return self.order[:-1]


def graph_of(catalog: Catalog, name: str) -> Graph:
    """The graph a refresh of `name` reads, by the catalog's names (no Spark)."""
    order: list[str] = []
    reads: dict[str, tuple[str, ...]] = {}
    bases: dict[str, frozenset[str]] = {}

    def visit(entry: DynamicTableEntry) -> None:
        relations = [catalog.stored(source) for source in sources_of(entry, catalog)]
        under: set[str] = set()
        for relation in relations:
            if not isinstance(relation, DynamicTableEntry):
                under.add(relation.name)
                continue
            if relation.name not in bases:
                visit(relation)
            under |= bases[relation.name]
        reads[entry.name] = tuple(relation.name for relation in relations)
        bases[entry.name] = frozenset(under)
        order.append(entry.name)

    visit(catalog.get(DynamicTableEntry, name))
    return Graph(tuple(order), reads, bases)


def newest(spark: SparkSession, catalog: Catalog, tables: Iterable[str]) -> dict[str, Read]:
    """The tables' versions now: the snapshot a refresh of a graph brings it to."""
    locations = {name: catalog.stored(name).location for name in sorted(tables)}
    return {name: Read(where, latest_version(spark, where)) for name, where in locations.items()}


def reflected(spark: SparkSession | None, location: str, version: int) -> dict[str, Read]:
    """The base versions version `version` of a dynamic table reflects: its newest refresh's
    record's (empty for a refresh recorded before they were)."""
    found, _ = newest_record(spark, location, REFRESH_MARKER, version)
    return RefreshCommit.from_json(found[1]).bases if found is not None else {}


def bases_read(
    spark: SparkSession, catalog: Catalog, reads: Iterable[SourceRead]
) -> dict[str, Read]:
    """The base versions a refresh reading `reads` reflects: a table's as read, a dynamic
    table's as the version read reflects."""
    bases: dict[str, Read] = {}
    for read in reads:
        relation = catalog.stored(read.name)
        if isinstance(relation, DynamicTableEntry):
            bases.update(reflected(spark, read.location, read.version))
        else:
            bases[relation.name] = Read(read.location, read.version)
    return bases


def behind(has: Mapping[str, Read], wanted: Mapping[str, Read]) -> bool | None:
    """Whether a dynamic table reflecting `has` must refresh to reflect `wanted`: False when it
    does, True when it is behind, None when it reflects a newer version of some table (another
    refresh moved it past the snapshot)."""
    if dict(has) == dict(wanted):
        return False
    newer = any(
        name in has and has[name].location == read.location and has[name].version > read.version
        for name, read in wanted.items()
    )
    return None if newer else True
