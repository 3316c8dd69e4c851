"""Which columns of a relation a query names: a column a query reads cannot be renamed or dropped
under it. Found by sqlglot's qualifier, which expands `*` and names each column's table."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from lake_assets.sql.binding import referenced_tables


def columns_read(
    query: str, relation: str, columns_of: Callable[[str], Sequence[str]]
) -> frozenset[str]:
    """The columns of `relation` (lower-cased) that `query` names, a `*` over it naming them all;
    every column of it when the query cannot be resolved (the safe answer)."""
    own = frozenset(column.lower() for column in columns_of(relation))
    try:
        expression = sqlglot.parse_one(query, read="spark")
        schema: dict[str, object] = {
            name: {column.lower(): "STRING" for column in columns_of(name)}
            for name in referenced_tables(expression)
        }
        qualified = qualify(expression, schema=schema, dialect="spark", quote_identifiers=False)
        scopes = traverse_scope(qualified)
    except SqlglotError:
        return own
    read: set[str] = set()
    for scope in scopes:
        for column in scope.columns:
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table) and source.name.lower() == relation.lower():
                read.add(column.name.lower())
    return frozenset(read & own)
