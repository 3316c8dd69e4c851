"""Second step: the plan of the query as the refresh runs it (see lowering.classify), with the
views it reads inlined and the sources' columns the catalog knows (they qualify the query's)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import StoredRelation
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.expected import drops_rows, kept
from lake_assets.dynamic_tables.grammar import refuse_hidden_names, refuse_time_travel
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.rewrites import runnable
from lake_assets.dynamic_tables.snapshots import sources_of
from lake_assets.dynamic_tables.steps.state import Refreshing
from lake_assets.sql.grammar import Grammar
from lake_assets.sql.statements import Query
from lake_assets.views.reading import inline_views


def lower(run: Refreshing) -> None:
    entry, catalog = run.entry, run.catalog
    run.plan = plan_of(entry, catalog)
    run.written = None
    if drops_rows(entry.expectations):
        columns = source_columns(catalog, sources_of(entry, catalog))
        run.written = runnable(written_query(entry, catalog), columns)


def plan_of(entry: DynamicTableEntry, catalog: Catalog) -> Plan:
    """The plan of the query as a refresh runs it (DESC and EXPLAIN show this one too)."""
    query, columns = (
        definition_of(entry, catalog),
        source_columns(catalog, sources_of(entry, catalog)),
    )
    return classify(query, columns)


def definition_of(entry: DynamicTableEntry, catalog: Catalog) -> exp.Expr:
    """The query a refresh runs: as written, with the views it reads as they are now, and only
    the rows its DROP ROW expectations let in (see expected)."""
    names = [column.name for column in entry.columns]
    return kept(written_query(entry, catalog), names, entry.expectations)


def written_query(entry: DynamicTableEntry, catalog: Catalog) -> exp.Expr:
    """Its query as written, with the views it reads as they are now."""
    statement = Grammar().spark(entry.query)
    assert isinstance(statement, Query)
    return query_of(catalog, entry.name, statement.expression)


def query_of(catalog: Catalog, name: str, expression: exp.Expr) -> exp.Expr:
    """`expression` with each view it reads inlined as the query it stands for (under the view's
    name), held to a dynamic table's rules as the query's own text is."""
    inlined = inline_views(expression, catalog.find_relation)
    refuse_hidden_names(name, inlined)
    refuse_time_travel(name, inlined)
    return inlined


def source_columns(catalog: Catalog, sources: Iterable[str]) -> dict[str, list[str]]:
    """The columns of each source the catalog knows, by name."""
    relations = {name: catalog.find_relation(name) for name in sources}
    return {
        name: [c.name for c in relation.columns]
        for name, relation in relations.items()
        if isinstance(relation, StoredRelation)
    }
