"""An ORDER BY without LIMIT or OFFSET dropped: a table's rows have no order, so it only sorts."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns

ORDER_IGNORED = "ORDER BY is ignored: a table's rows have no order; sort when you query it"


def only_sorts(query: exp.Expr) -> bool:
    """ORDER BY without LIMIT or OFFSET keeps every row: it only sorts."""
    args = query.args
    return bool(args.get("order")) and not args.get("limit") and not args.get("offset")


def drop_sort(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """The query a dynamic table runs: a table has no order, so an ORDER BY that only sorts
    goes."""
    if only_sorts(expression):
        expression = expression.copy()
        expression.set("order", None)
    return expression
