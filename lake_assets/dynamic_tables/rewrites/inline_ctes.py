"""CTEs written as the derived tables they stand for, so that the rules for derived tables apply."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns


def inline_ctes(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """`WITH c AS (…) SELECT … FROM c` as the query with each reference to a CTE written as the
    derived table it stands for (Spark inlines CTEs too), so that the rules for derived tables
    apply; a recursive WITH stays."""
    with_ = expression.args.get("with_") or expression.args.get("with")
    if with_ is None or with_.args.get("recursive"):
        return expression
    result = expression.copy()
    result.set("with_", None)
    result.set("with", None)
    bodies: dict[str, exp.CTE] = {}
    for cte in with_.expressions:
        body = cte.copy()
        _substitute(body.this, bodies)
        bodies[cte.alias_or_name.lower()] = body
    _substitute(result, bodies)
    return result


def _substitute(query: exp.Expr, bodies: dict[str, exp.CTE]) -> None:
    """Each table reference of `query` that names a CTE of `bodies`, replaced by its body."""
    for table in list(query.find_all(exp.Table)):
        cte = bodies.get(table.name.lower()) if not table.db else None
        if cte is None or not isinstance(table.this, exp.Identifier):
            continue
        alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
        names = cte.args["alias"].columns if cte.args.get("alias") else []
        if names:
            alias.set("columns", [name.copy() for name in names])
        table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
