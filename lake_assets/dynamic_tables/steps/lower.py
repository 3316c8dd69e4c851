"""Second step: the plan of the query as the refresh runs it (see lowering.classify), with the
sources' columns the catalog knows (they qualify the query's)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import StoredRelation
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.steps.state import Refreshing
from lake_assets.sql.grammar import Grammar
from lake_assets.sql.statements import Query


def lower(run: Refreshing) -> None:
    run.plan = plan_of(run.entry, run.catalog)


def plan_of(entry: DynamicTableEntry, catalog: Catalog) -> Plan:
    """The plan of the query as a refresh runs it (DESC and EXPLAIN show this one too)."""
    query, columns = definition_of(entry), source_columns(catalog, entry.sources)
    return classify(query, columns)


def definition_of(entry: DynamicTableEntry) -> exp.Expr:
    statement = Grammar().spark(entry.query)
    assert isinstance(statement, Query)
    return statement.expression


def source_columns(catalog: Catalog, sources: Iterable[str]) -> dict[str, list[str]]:
    """The columns of each source the catalog knows, by name."""
    relations = {name: catalog.find_relation(name) for name in sources}
    return {
        name: [c.name for c in relation.columns]
        for name, relation in relations.items()
        if isinstance(relation, StoredRelation)
    }
