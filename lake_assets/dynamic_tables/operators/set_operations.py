"""Set operations: UNION ALL adds up its branches' changes (rows); UNION, INTERSECT and EXCEPT,
ALL or not, keep a row by how many times each branch holds it, so they are recomputed by all
their columns, for the rows a change touches read through each branch (recompute)."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.analyses.folds import is_aggregate
from lake_assets.dynamic_tables.analyses.shapes import nested_set_operation, select_problem
from lake_assets.dynamic_tables.operators.base import Classify, Root
from lake_assets.dynamic_tables.operators.branches import branch
from lake_assets.dynamic_tables.operators.recompute import RecomputeByKey
from lake_assets.dynamic_tables.operators.rows import rows


def lower(query: exp.Expr, classify: Classify) -> Root | str | None:
    """The root of a set operation of SELECTs, or why it is refreshed in full."""
    if not isinstance(query, exp.SetOperation):
        return None
    selects: list[exp.Select] = []
    problem = _set_branches(query, selects)
    if problem:
        return problem
    for select in selects:
        problem = select_problem(select) or (
            "a set operation of aggregates is refreshed in full" if is_aggregate(select) else None
        )
        if problem:
            return problem
    branches = tuple(map(branch, selects))
    union_all = all(
        isinstance(node, exp.Union) and not node.args.get("distinct")
        for node in query.find_all(exp.SetOperation)
    )
    return rows(query, branches) if union_all else RecomputeByKey(query, (), branches)


def _set_branches(query: exp.Expr, branches: list[exp.Select]) -> str | None:
    if isinstance(query, exp.SetOperation):
        if any(query.args.get(key) for key in ("order", "limit", "offset")):
            return "ORDER BY / LIMIT inside a set operation is refreshed in full"
        return _set_branches(query.this, branches) or _set_branches(query.expression, branches)
    if nested_set_operation(query):
        return _set_branches(query.this, branches)
    if not isinstance(query, exp.Select):
        return "a parenthesized query in a set operation is refreshed in full"
    branches.append(query)
    return None
