"""Unqualified columns of conditions named by their table, so that keys and joins can be told."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns, tables


def qualify(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """`expression` with the unqualified columns of its join conditions, WHERE and HAVING,
    subqueries there included, named by the table in scope that has them (a subquery's own
    first, as Spark resolves them); `columns` are the sources' columns by table name. A name no
    table or several tables in scope have is left as written."""
    columns = context.get("columns", {})
    if not isinstance(expression, exp.Select) or not columns:
        return expression
    select = expression.copy()
    conditions = [join.args.get("on") for join in select.args.get("joins") or []]
    conditions += [select.args.get("where"), select.args.get("having")]
    for condition in filter(None, conditions):
        for column in list(condition.find_all(exp.Column)):
            _qualify(column, [_scope(s, columns) for s in _enclosing(column, select)])
    return select


def _enclosing(node: exp.Expr, top: exp.Select) -> list[exp.Select]:
    """The SELECTs around `node`, innermost first, up to `top`."""
    chain: list[exp.Select] = []
    scope = node.find_ancestor(exp.Select)
    while scope is not None:
        chain.append(scope)
        if scope is top:
            break
        scope = scope.find_ancestor(exp.Select)
    return chain


def _scope(select: exp.Select, columns: Columns) -> dict[str, set[str]]:
    """The columns of each table a SELECT reads directly, by the table's alias."""
    return {
        table.alias_or_name.lower(): {c.lower() for c in columns.get(table.name.lower(), ())}
        for table in tables(select)
    }


def _qualify(column: exp.Column, scopes: list[dict[str, set[str]]]) -> None:
    if column.table or not isinstance(column.this, exp.Identifier):
        return
    for scope in scopes:
        owners = [alias for alias, names in scope.items() if column.name.lower() in names]
        if len(owners) == 1:
            column.set("table", exp.to_identifier(owners[0]))
        if owners:
            return
