"""A subquery's tables under aliases of their own, so that each alias names one table."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns, tables


def distinct_aliases(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """`expression` with every table of a subquery under an alias no other table in it has:
    inside the subquery its name hid the outer one's, so the columns qualified by it there are
    its own. Then each alias names one table occurrence, whichever scope reads the column."""
    if not isinstance(expression, exp.Select):
        return expression
    select = expression.copy()
    taken: set[str] = set()
    for scope in select.find_all(exp.Select, bfs=True):
        for table in tables(scope):
            alias = table.alias_or_name.lower()
            if alias in taken and scope is not select:
                fresh = _fresh(alias, taken)
                for column in scope.find_all(exp.Column):
                    if column.table.lower() == alias and _owner(column, alias) is scope:
                        column.set("table", exp.to_identifier(fresh))
                table.set("alias", exp.TableAlias(this=exp.to_identifier(fresh)))
                alias = fresh
            taken.add(alias)
    return select


def _owner(column: exp.Column, alias: str) -> exp.Select | None:
    """The innermost SELECT around `column` that reads a table under `alias`."""
    scope = column.find_ancestor(exp.Select)
    while scope is not None:
        if any(table.alias_or_name.lower() == alias for table in tables(scope)):
            return scope
        scope = scope.find_ancestor(exp.Select)
    return None


def _fresh(alias: str, taken: set[str]) -> str:
    number = 2
    while f"{alias}_{number}" in taken:
        number += 1
    return f"{alias}_{number}"
