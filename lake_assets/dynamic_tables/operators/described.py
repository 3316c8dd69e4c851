"""The operators of a query refreshed FULL, as EXPLAIN shows them: each recomputed."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.analyses.keys import join_key
from lake_assets.dynamic_tables.analyses.shapes import outer_join
from lake_assets.dynamic_tables.operators.base import RECOMPUTED, Operator, Step
from lake_assets.dynamic_tables.operators.rows import items_text, set_tree
from lake_assets.dynamic_tables.runtime.queries import references


def described(query: exp.Expr) -> Operator:
    """The query's operators, from the top: set operations, then each SELECT's."""
    return set_tree(query, _select, lambda _: RECOMPUTED)


def _select(select: exp.Expr) -> Operator:
    """Aggregate or projection, over its filter, lateral views, joins and scans."""
    if not isinstance(select, exp.Select):
        return Step(select.sql(dialect="spark")[:80], "")
    below: tuple[Operator, ...] = tuple(
        Step(f"Scan {table.name.lower()}", RECOMPUTED) for table in references(select)
    )
    joins = select.args.get("joins") or []
    if any(map(outer_join, joins)):
        key = join_key(select)
        kinds = [" ".join(filter(None, (j.side, j.kind))) or "INNER" for j in joins]
        text = key.expression.sql(dialect="spark") if key else "?"
        below = (Step(f"{' + '.join(kinds)} JOIN on {text}", RECOMPUTED, below),)
    elif len(below) > 1:
        below = (Step("Inner join", RECOMPUTED, below),)
    for lateral in reversed(select.args.get("laterals") or []):
        below = (Step(lateral.sql(dialect="spark").strip()[:80], RECOMPUTED, below),)
    where = select.args.get("where")
    if where is not None:
        below = (Step(f"Filter {where.this.sql(dialect='spark')[:80]}", RECOMPUTED, below),)
    group = select.args.get("group")
    if group is not None:
        keys = ", ".join(e.sql(dialect="spark") for e in group.expressions)
        return Step(f"Aggregate GROUP BY {keys}", RECOMPUTED, below)
    return Step(f"Project {items_text(select)}", RECOMPUTED, below)
