"""A dynamic table's query lowered to the tree of operators it refreshes by (see operators).

Each operator module that roots a tree has a lowering rule; LOWERINGS tries them in order and the
first that claims the query gives its root, or why it refreshes FULL. TopN: ORDER BY … LIMIT over
any of the others. Set operations: UNION ALL as rows, the others recomputed by all their columns.
RecomputeByKey: a result keyed by its GROUP BY, DISTINCT or PARTITION BY. Aggregate: rows folded
into groups (COUNT, SUM, AVG, MIN, MAX and expressions of them). Rows: rows that change row by row
(filters and projections over inner joins) or by key (outer, semi and anti joins, subqueries and
derived tables tied to a key). Parts of a query that cannot be maintained where they stand become
stages. A new rule is one operator module and one line here."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from lake_assets.dynamic_tables.operators import aggregate, recompute, rows, set_operations, top_n
from lake_assets.dynamic_tables.operators.base import Classify, Lowering, Plan, Root, Stage
from lake_assets.dynamic_tables.operators.described import described
from lake_assets.dynamic_tables.rewrites import Columns, runnable
from lake_assets.dynamic_tables.rewrites.stages import staged


def recursive(query: exp.Expr, classify: Classify) -> str | None:
    """A recursive query's rows depend on each other's: recomputed."""
    with_ = query.args.get("with_") or query.args.get("with")
    return "WITH RECURSIVE is refreshed in full" if with_ else None


LOWERINGS: tuple[Lowering, ...] = (
    recursive,
    top_n.lower,
    set_operations.lower,
    recompute.lower,
    aggregate.lower,
    rows.lower,
)


def classify(query: exp.Expr, columns: Columns | None = None) -> Plan:
    """The incremental plan of a query as it runs (see rewrites.runnable), its parts staged
    when it cannot be maintained whole (see stages), or a FULL plan that says why."""
    query = runnable(query, columns)
    lowered = _lowered(query)
    if isinstance(lowered, Root):
        return Plan(query, lowered)
    return _staged_plan(query) or Plan(query, described(query), lowered)


def _lowered(query: exp.Expr) -> Root | str:
    """The root the first rule that claims the query gives, or why it refreshes FULL."""
    for lower in LOWERINGS:
        found = lower(query, classify)
        if found is not None:
            return found
    return f"{type(query).__name__.upper()} is refreshed in full"


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
