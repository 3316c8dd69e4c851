"""Spark reads `user`, `current_time`, `localtimestamp` and their like, written without
parentheses, as calls when no column of that name is in scope: written as calls, the analyses
see what they are (their values come from the session and the clock)."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns

# Names sqlglot reads as columns that Spark calls when no column has them.
NILADIC = frozenset({"user", "current_time", "localtimestamp"})


def niladic_calls(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """`expression` with each unqualified column that is one of NILADIC, and that no source
    column and no item of its SELECT is named, written as the call Spark makes of it. Without
    the sources' columns nothing is known to be a call, and the query is left as it is."""
    columns = context.get("columns") or {}
    if not columns:
        return expression
    known = {name.lower() for names in columns.values() for name in names}
    query = expression.copy()
    for column in list(query.find_all(exp.Column)):
        name = column.name.lower()
        if column.table or name not in NILADIC or name in known:
            continue
        select = column.parent_select
        if select is not None and name in {item.lower() for item in select.named_selects}:
            continue
        column.replace(exp.Anonymous(this=name))
    return query
