"""A dynamic table's query lowered to the tree of operators it refreshes by (see operators).

Rows (operators.rows): rows that change row by row (filters and projections over inner joins,
UNION ALL), or by key (outer, semi and anti joins, subqueries and derived tables tied to a key:
see keys.join_key). Aggregate: those rows folded into groups (COUNT, SUM, AVG, MIN, MAX and
expressions of them). RecomputeByKey: a result keyed by its GROUP BY, DISTINCT or PARTITION BY,
or by all its columns (UNION, INTERSECT, EXCEPT), recomputed for the keys a change touches.
TopN: ORDER BY … LIMIT over any of these. Anything else is refreshed FULL, and the plan says
why; parts of a query that cannot be maintained where they stand become stages."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from lake_assets.dynamic_tables.analyses.folds import (
    group_by_problem,
    grouping_problem,
    is_aggregate,
    select_list,
)
from lake_assets.dynamic_tables.analyses.shapes import (
    keyed_keys,
    nested_set_operation,
    select_problem,
)
from lake_assets.dynamic_tables.analyses.top import top_n
from lake_assets.dynamic_tables.operators.aggregate import Aggregate
from lake_assets.dynamic_tables.operators.base import Plan, Root, Stage
from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.operators.branches import branch
from lake_assets.dynamic_tables.operators.described import described
from lake_assets.dynamic_tables.operators.recompute import RecomputeByKey
from lake_assets.dynamic_tables.operators.rows import rows
from lake_assets.dynamic_tables.operators.top_n import TopN, ranked_column
from lake_assets.dynamic_tables.rewrites import Columns, runnable
from lake_assets.dynamic_tables.rewrites.stages import stage_name, staged
from lake_assets.dynamic_tables.runtime.queries import key_rows, pre_aggregation


def classify(query: exp.Expr, columns: Columns | None = None) -> Plan:
    """The incremental plan of a query as it runs (see rewrites.runnable), its parts staged
    when it cannot be maintained whole (see stages), or a FULL plan that says why."""
    query = runnable(query, columns)
    lowered = _lowered(query)
    if isinstance(lowered, Root):
        return Plan(query, lowered)
    return _staged_plan(query) or Plan(query, described(query), lowered)


def _staged_plan(query: exp.Expr) -> Plan | None:
    """The plan of the query over its stages, when it and every stage can be maintained."""
    found = staged(query)
    if found is None:
        return None
    stages = []
    for name, part in found.parts:
        plan = classify(part)
        if plan.reason:
            return None
        stages.append(Stage(name, plan, tuple(part.named_selects)))
    outer = classify(found.query)
    if outer.reason:
        return None
    return replace(outer, stages=(*stages, *outer.stages))


def _lowered(query: exp.Expr) -> Root | str:
    """The root operator of the query, or why it refreshes FULL."""
    if query.args.get("with_") or query.args.get("with"):
        return "WITH RECURSIVE is refreshed in full"
    top = top_n(query)
    if isinstance(top, str):
        return top
    if top is not None:
        ranked = classify(top.rows)
        if ranked.reason:
            return f"{ranked.reason} (the rows ORDER BY … LIMIT ranks)"
        order = ", ".join(term.sql(dialect="spark") for term in query.args["order"].expressions)
        assert isinstance(top.rows, exp.Query), "a top-N ranks the rows of a query"
        items = len(top.rows.selects) - len(top.hidden)
        columns = (*map(ranked_column, range(items)), *top.hidden)
        return TopN(top, Stage(stage_name(top.rows), ranked, columns), order)
    if isinstance(query, exp.SetOperation):
        return _set_operation(query)
    if not isinstance(query, exp.Select):
        return f"{type(query).__name__.upper()} is refreshed in full"
    problem = select_problem(query)
    if problem:
        return _keyed(query) or problem
    if is_aggregate(query):
        lowered = _aggregate(query)
        return (_keyed(query) or lowered) if isinstance(lowered, str) else lowered
    return rows(query, (branch(query),))


def _keyed(select: exp.Select) -> RecomputeByKey | None:
    """GROUP BY (any aggregate, HAVING), DISTINCT and windows with a PARTITION BY over inner
    joins of tables: the keys a change touches are recomputed (see recompute)."""
    keys = keyed_keys(select)
    if not keys:
        return None
    return RecomputeByKey(select, tuple(enumerate(keys)), (branch(key_rows(select, keys)),))


def _set_operation(query: exp.SetOperation) -> Root | str:
    """UNION ALL adds up its branches' changes (rows). UNION, INTERSECT and EXCEPT, ALL or not,
    keep a row by how many times each branch holds it: recomputed by all the columns, the rows
    a change touches read through each branch."""
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


def _aggregate(select: exp.Select) -> Aggregate | str:
    """A group is updated from its own changed rows only when its keys are all selected."""
    group = select.args.get("group")
    problem = grouping_problem(group)
    if problem:
        return problem
    items = [item.unalias() for item in select.expressions]
    listed = select_list(items)
    if isinstance(listed, str):
        return listed
    keys, aggregates, expressions = listed
    if group is None and keys:
        return "an aggregate without GROUP BY selects only aggregates"
    if group is not None:
        problem = group_by_problem(select, items, keys)
        if problem:
            return problem
    read: Branch = branch(pre_aggregation(select, keys, aggregates))
    return Aggregate(select, tuple(keys), tuple(aggregates), tuple(expressions), read)
