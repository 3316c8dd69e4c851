"""How a dynamic table's query refreshes, decided with sqlglot: the plan of the query as it runs.

PROJECTION: rows that change row by row (filters and projections over inner joins, UNION ALL),
or by key (outer, semi and anti joins, subqueries and derived tables tied to a key: see
keys.join_key). AGGREGATE: those rows folded into groups (COUNT, SUM, AVG, MIN, MAX and
expressions of them). KEYED: a result keyed by its GROUP BY, DISTINCT or PARTITION BY, or by all
its columns (UNION, INTERSECT, EXCEPT), recomputed for the keys a change touches. TOP_N: ORDER BY
… LIMIT over any of these (see top). Anything else is refreshed FULL, and the plan says why."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, replace

from sqlglot import exp

from lake_assets.core import names
from lake_assets.dynamic_tables.folds import (
    Aggregate,
    group_by_problem,
    grouping_problem,
    is_aggregate,
    select_list,
)
from lake_assets.dynamic_tables.shapes import derived_table, keyed_keys, select_problem
from lake_assets.dynamic_tables.stages import staged
from lake_assets.dynamic_tables.subqueries import (
    decorrelated,
    distinct_aliases,
    inlined,
    merged,
    qualified,
)
from lake_assets.dynamic_tables.top import TopN, top_n

PROJECTION, AGGREGATE, KEYED, TOP_N = "PROJECTION", "AGGREGATE", "KEYED", "TOP_N"
ROWS = names.hidden("rows")


@dataclass(frozen=True)
class Plan:
    """`reason` is set when the query is refreshed FULL; `branches` are its SELECTs."""

    shape: str | None
    reason: str | None
    branches: tuple[exp.Select, ...] = ()
    # KEYED: the keys by position; none for a set operation, keyed by all its columns.
    keys: tuple[tuple[int, exp.Expr], ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    # Items that combine aggregates: each computed from its aggregates' value columns.
    expressions: tuple[tuple[int, exp.Expr], ...] = ()
    # TOP_N: the ORDER BY and LIMIT, and the plan of the rows ranked (kept in a hidden table).
    top: TopN | None = None
    ranked: Plan | None = None
    # The parts of the query kept in hidden tables of their own, which `query` reads.
    stages: tuple[Stage, ...] = ()
    # The query the refresh runs (see runnable), reading the stages when it has any.
    query: exp.Expr | None = None

    @property
    def runs(self) -> exp.Expr:
        assert self.query is not None, "a plan from classify carries its query"
        return self.query

    def all_stages(self) -> Iterator[Stage]:
        """Every stage, each after the stages it reads, once: the order they refresh in."""
        seen: set[str] = set()
        for stage in (*self.stages, *(self.ranked.stages if self.ranked else ())):
            for inner in (*stage.plan.all_stages(), stage):
                if inner.name not in seen:
                    seen.add(inner.name)
                    yield inner

    @property
    def ranking(self) -> tuple[TopN, Plan]:
        """A top-N's ORDER BY and LIMIT, and the plan of the rows it ranks."""
        assert self.top is not None, "only a top-N plan ranks rows"
        assert self.ranked is not None, "only a top-N plan ranks rows"
        return self.top, self.ranked

    @property
    def hidden(self) -> tuple[str, ...]:
        """Hidden columns the dynamic table keeps after its visible ones."""
        if self.shape == KEYED:
            return tuple(key_name(index) for index, _ in self.keys)
        if self.shape != AGGREGATE:
            return ()
        return (ROWS, *(name for a in self.aggregates for name, _ in a.hidden()))


@dataclass(frozen=True)
class Stage:
    """A part of a query (see stages) kept in a hidden table maintained by its own plan, read
    by the query under `name` as a table of `columns`."""

    name: str
    plan: Plan
    columns: tuple[str, ...]


def _full(reason: str) -> Plan:
    return Plan(None, reason)


ORDER_IGNORED = "ORDER BY is ignored: a table's rows have no order; sort when you query it"


def _only_sorts(query: exp.Expr) -> bool:
    """ORDER BY without LIMIT or OFFSET keeps every row: it only sorts."""
    args = query.args
    return bool(args.get("order")) and not args.get("limit") and not args.get("offset")


def without_order(query: exp.Expr) -> exp.Expr:
    """The query a dynamic table runs: a table has no order, so an ORDER BY that only sorts
    goes."""
    if _only_sorts(query):
        query = query.copy()
        query.set("order", None)
    return query


def runnable(query: exp.Expr, columns: Mapping[str, Collection[str]] | None = None) -> exp.Expr:
    """The query a dynamic table runs: its CTEs inlined, without an ORDER BY that only sorts, a
    derived table that only projects merged into it, its conditions' columns qualified by their
    tables (`columns`: the sources' columns by table name), its subqueries' tables under aliases
    of their own, and the subqueries of its WHERE that are semi or anti joins written as joins;
    a derived table it reads is made runnable the same way."""
    query = qualified(merged(without_order(inlined(query))), columns or {})
    query = decorrelated(distinct_aliases(query))
    derived = derived_table(query) if isinstance(query, exp.Select) else None
    if derived is not None and isinstance(derived.this, exp.Select):
        copy = query.copy()
        assert isinstance(copy, exp.Select), "a copy of a SELECT"
        inner = derived_table(copy)
        assert inner is not None, "the copy reads the same derived table"
        inner.set("this", runnable(derived.this, columns))
        return copy
    return query


def notes(query: exp.Expr) -> tuple[str, ...]:
    """What a dynamic table does with its definition that its text does not say."""
    return (ORDER_IGNORED,) if _only_sorts(query) else ()


def classify(query: exp.Expr, columns: Mapping[str, Collection[str]] | None = None) -> Plan:
    """The incremental plan of a query as it runs (see runnable), its parts staged when it
    cannot be maintained whole (see stages), or a FULL plan that says why."""
    query = runnable(query, columns)
    plan = replace(_classified(query), query=query)
    if plan.reason:
        return _staged_plan(query) or plan
    return plan


def _staged_plan(query: exp.Expr) -> Plan | None:
    """The plan of the query over its stages, when it and every stage can be maintained."""
    found = staged(query)
    if found is None:
        return None
    stages = []
    for name, part in found.parts:
        plan = classify(part)
        if plan.reason or plan.shape == TOP_N:
            return None
        stages.append(Stage(name, plan, tuple(part.named_selects)))
    outer = classify(found.query)
    if outer.reason:
        return None
    return replace(outer, stages=(*stages, *outer.stages))


def _classified(query: exp.Expr) -> Plan:
    if query.args.get("with_") or query.args.get("with"):
        return _full("WITH RECURSIVE is refreshed in full")
    top = top_n(query)
    if isinstance(top, str):
        return _full(top)
    if top is not None:
        ranked = classify(top.rows)
        if ranked.reason:
            return _full(f"{ranked.reason} (the rows ORDER BY … LIMIT ranks)")
        return Plan(TOP_N, None, ranked.branches, top=top, ranked=ranked)
    if isinstance(query, exp.SetOperation):
        return _set_operation(query)
    if not isinstance(query, exp.Select):
        return _full(f"{type(query).__name__.upper()} is refreshed in full")
    problem = select_problem(query)
    if problem:
        return _keyed(query) or _full(problem)
    if is_aggregate(query):
        plan = _aggregate_plan(query)
        return (_keyed(query) or plan) if plan.reason else plan
    return Plan(PROJECTION, None, (query,))


def _keyed(select: exp.Select) -> Plan | None:
    """GROUP BY (any aggregate, HAVING), DISTINCT and windows with a PARTITION BY over inner
    joins of tables: the keys a change touches are recomputed (see keys and keyed)."""
    keys = keyed_keys(select)
    return Plan(KEYED, None, (select,), tuple(enumerate(keys))) if keys else None


def _set_operation(query: exp.SetOperation) -> Plan:
    """UNION ALL adds up its branches' changes (PROJECTION). UNION, INTERSECT and EXCEPT, ALL or
    not, keep a row by how many times each branch holds it: KEYED by all the columns (no `keys`),
    the rows a change touches recomputed through each branch."""
    branches: list[exp.Select] = []
    problem = _set_branches(query, branches)
    if problem:
        return _full(problem)
    for branch in branches:
        problem = select_problem(branch) or (
            "a set operation of aggregates is refreshed in full" if is_aggregate(branch) else None
        )
        if problem:
            return _full(problem)
    union_all = all(
        isinstance(node, exp.Union) and not node.args.get("distinct")
        for node in query.find_all(exp.SetOperation)
    )
    return Plan(PROJECTION if union_all else KEYED, None, tuple(branches))


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


def nested_set_operation(query: exp.Expr) -> bool:
    """A set operation in parentheses inside another (`A EXCEPT (B INTERSECT C)`)."""
    return (
        isinstance(query, exp.Subquery)
        and isinstance(query.this, exp.SetOperation)
        and not query.alias
        and isinstance(query.parent, exp.SetOperation)
    )


def _aggregate_plan(select: exp.Select) -> Plan:
    """A group is updated from its own changed rows only when its keys are all selected."""
    group = select.args.get("group")
    problem = grouping_problem(group)
    if problem:
        return _full(problem)
    items = [item.unalias() for item in select.expressions]
    listed = select_list(items)
    if isinstance(listed, str):
        return _full(listed)
    keys, aggregates, expressions = listed
    if group is None:
        if keys:
            return _full("an aggregate without GROUP BY selects only aggregates")
        return Plan(AGGREGATE, None, (select,), (), tuple(aggregates), tuple(expressions))
    problem = group_by_problem(select, items, keys)
    if problem:
        return _full(problem)
    return Plan(AGGREGATE, None, (select,), tuple(keys), tuple(aggregates), tuple(expressions))


def key_name(index: int) -> str:
    """Hidden column: a keyed query's key `index`, kept with each of its rows."""
    return names.hidden(f"key_{index}")
