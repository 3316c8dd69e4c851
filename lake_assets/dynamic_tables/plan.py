"""How a dynamic table's query refreshes, decided with sqlglot: the plan of the query as it runs.

PROJECTION: rows that change row by row (filters and projections over inner joins, UNION ALL),
or by key (outer, semi and anti joins, subqueries and derived tables tied to a key: see
keys.join_key). AGGREGATE: those rows folded into groups (COUNT, SUM, AVG, MIN, MAX and
expressions of them). KEYED: a result keyed by its GROUP BY, DISTINCT or PARTITION BY, or by all
its columns (UNION, INTERSECT, EXCEPT), recomputed for the keys a change touches. TOP_N: ORDER BY
… LIMIT over any of these (see top). Anything else is refreshed FULL, and the plan says why."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace

from sqlglot import exp

from lake_assets.core import names
from lake_assets.dynamic_tables.keys import join_key, key_of
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
COUNT_STAR, COUNT, COUNT_DISTINCT, SUM, AVG, MIN, MAX = (
    "COUNT(*)", "COUNT", "COUNT(DISTINCT)", "SUM", "AVG", "MIN", "MAX",
)  # fmt: skip
ROWS = names.hidden("rows")

_NON_DETERMINISTIC_NAMES = {
    "rand", "random", "randn", "uuid", "now", "current_timestamp", "current_date",
    "localtimestamp", "unix_timestamp", "monotonically_increasing_id", "spark_partition_id",
    "input_file_name", "shuffle", "current_user", "session_user", "user",
}  # fmt: skip
_NON_DETERMINISTIC = (
    exp.Rand, exp.Randn, exp.Uuid, exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime,
    exp.CurrentUser, exp.Shuffle,
)  # fmt: skip
_SUPPORTED_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)
# Clauses of a SELECT that are refreshed in full, with how the reason names them.
_FULL_CLAUSES = (
    ("distinct", "SELECT DISTINCT"),
    ("limit", "LIMIT"),
    ("offset", "OFFSET"),
    ("order", "ORDER BY"),
    ("having", "HAVING"),
    ("qualify", "QUALIFY"),
    ("sort", "SORT BY"),
    ("cluster", "CLUSTER BY"),
    ("distribute", "DISTRIBUTE BY"),
)


@dataclass(frozen=True)
class Aggregate:
    """One aggregate of the SELECT list's item `position` (the item itself, or one of the
    aggregates an expression combines); `argument` is None for COUNT(*). `slot` names its state
    columns apart from every other aggregate's: the position, then its order in the item."""

    kind: str
    position: int
    argument: exp.Expr | None
    call: exp.AggFunc
    slot: str
    in_expression: bool = False

    @property
    def nn(self) -> str:
        """Hidden column: how many non-NULL arguments the group has (SUM and AVG need it)."""
        return names.hidden(f"nn_{self.slot}")

    @property
    def sum(self) -> str:
        """Hidden column: the group's SUM of the argument (AVG needs it)."""
        return names.hidden(f"sum_{self.slot}")

    @property
    def value(self) -> str | None:
        """Hidden column of an aggregate inside an expression: its own value, folded like an
        item's, from which the expression is computed again."""
        return names.hidden(f"v_{self.slot}") if self.in_expression else None

    def hidden(self) -> list[tuple[str, exp.Expr]]:
        """Hidden state columns with the aggregate that computes each in a full refresh."""
        columns: list[tuple[str, exp.Expr]] = []
        if self.value is not None:
            columns.append((self.value, self.call.copy()))
        if self.kind in (SUM, AVG) and self.argument is not None:
            columns.append((self.nn, exp.Count(this=self.argument.copy())))
            if self.kind == AVG:
                columns.append((self.sum, exp.Sum(this=self.argument.copy())))
        return columns


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
    problem = _select_problem(query)
    if problem:
        return _keyed(query) or _full(problem)
    if _is_aggregate(query):
        plan = _aggregate_plan(query)
        return (_keyed(query) or plan) if plan.reason else plan
    return Plan(PROJECTION, None, (query,))


# Clauses a keyed recompute takes: they look at other rows, but only at rows of the same key.
_KEYED_CLAUSES = frozenset({"distinct", "having", "qualify"})


def _keyed(select: exp.Select) -> Plan | None:
    """GROUP BY (any aggregate, HAVING), DISTINCT and windows with a PARTITION BY over inner
    joins of tables: the keys a change touches are recomputed (see keys and keyed)."""
    for clause, _ in _FULL_CLAUSES:
        if clause not in _KEYED_CLAUSES and select.args.get(clause):
            return None
    for check in (_lateral_problem, _non_deterministic_problem, _subquery_problem, _from_problem):
        if check(select):
            return None
    keys = key_of(select)
    if not keys:
        return None
    return Plan(KEYED, None, (select,), tuple(enumerate(keys)))


def _set_operation(query: exp.SetOperation) -> Plan:
    """UNION ALL adds up its branches' changes (PROJECTION). UNION, INTERSECT and EXCEPT, ALL or
    not, keep a row by how many times each branch holds it: KEYED by all the columns (no `keys`),
    the rows a change touches recomputed through each branch."""
    branches: list[exp.Select] = []
    problem = _set_branches(query, branches)
    if problem:
        return _full(problem)
    for branch in branches:
        problem = _select_problem(branch) or (
            "a set operation of aggregates is refreshed in full" if _is_aggregate(branch) else None
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


def _select_problem(select: exp.Select) -> str | None:
    """Why a SELECT cannot be maintained from changes, or None."""
    for check in _SELECT_CHECKS:
        problem = check(select)
        if problem:
            return problem
    return None


def _clause_problem(select: exp.Select) -> str | None:
    """These clauses keep or drop a row by looking at the others, which one row's change cannot."""
    for key, label in _FULL_CLAUSES:
        if select.args.get(key):
            return f"{label} is refreshed in full"
    return None


def _window_problem(select: exp.Select) -> str | None:
    """A window function's value depends on the other rows of its window, not on its row alone."""
    return "window functions are refreshed in full" if select.find(exp.Window) else None


def _non_deterministic_problem(select: exp.Select) -> str | None:
    """Rows that read differently each time could never be taken back out of the result."""
    for node in select.walk():
        if isinstance(node, _NON_DETERMINISTIC) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in _NON_DETERMINISTIC_NAMES
        ):
            return f"non-deterministic function {node.sql(dialect='spark')} is refreshed in full"
    return None


def _subquery_problem(select: exp.Select) -> str | None:
    """A subquery's rows are read by key: those its correlation (or IN) ties to the key of the
    outer query's rows (see keys.join_key)."""
    if has_subqueries(select) and join_key(select) is None:
        return (
            "subqueries are refreshed in full unless equalities (a correlation, or IN) tie each "
            "one's tables to a key of the rows the query reads, and they have no ORDER BY, LIMIT "
            "or window"
        )
    return None


def has_subqueries(select: exp.Select) -> bool:
    """Subqueries outside the derived table the select may read (see derived_table)."""
    derived = derived_table(select)
    return any(
        inner is not select and (derived is None or not _within(inner, derived))
        for inner in select.find_all(exp.Select)
    )


def _within(node: exp.Expr, ancestor: exp.Expr) -> bool:
    step: exp.Expr | None = node
    while step is not None and step is not ancestor:
        step = step.parent
    return step is ancestor


def derived_table(select: exp.Select) -> exp.Subquery | None:
    """The derived table a select reads as its only FROM item, if it does."""
    from_ = select.args.get("from_") or select.args.get("from")
    derived = from_.this if from_ is not None else None
    if isinstance(derived, exp.Subquery) and not select.args.get("joins"):
        return derived
    return None


def by_join_key(select: exp.Select) -> bool:
    """Whether the select's change is its rows of the keys a change touches (see
    incremental.signed_rows) rather than the delta rule's over inner joins."""
    return has_subqueries(select) or any(map(outer_join, select.args.get("joins") or []))


# Generators whose rows depend on their row alone: a LATERAL VIEW of them is row by row.
_GENERATORS = (exp.Explode, exp.Inline, exp.Stack)


def _lateral_problem(select: exp.Select) -> str | None:
    """A LATERAL VIEW turns each row of the FROM into rows of its own (explode, posexplode,
    inline, stack): it changes row by row over inner joins of tables."""
    laterals = select.args.get("laterals") or []
    for lateral in laterals:
        if not isinstance(lateral.this, _GENERATORS):
            return f"LATERAL VIEW {lateral.this.sql(dialect='spark')} is refreshed in full"
    if laterals and (by_join_key(select) or derived_table(select) is not None):
        return "LATERAL VIEW beside outer joins, subqueries or a derived table is refreshed in full"
    return None


def _from_problem(select: exp.Select) -> str | None:
    """Inner joins of plain tables change by the delta rule; outer, semi and anti joins by
    their join key (see incremental.signed_rows), so every table must be equal on one."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        return "a query without FROM is refreshed in full"
    derived = derived_table(select)
    if derived is not None:
        return _derived_problem(derived)
    joins = select.args.get("joins") or []
    for relation in [from_.this, *(join.this for join in joins)]:
        problem = _relation_problem(relation)
        if problem:
            return problem
    outer = [join for join in joins if outer_join(join)]
    if outer and join_key(select) is None:
        kind = " ".join(part for part in (outer[0].side, outer[0].kind) if part)
        return (
            f"{kind} JOIN is refreshed in full unless equalities in the joins' ON (or the "
            "WHERE) join every table on one key"
        )
    return None


def _derived_problem(derived: exp.Subquery) -> str | None:
    """A derived table's rows of one key value (its GROUP BY, DISTINCT or PARTITION BY) come
    from its source rows of that value: the keys a change touches are recomputed in it."""
    inner = derived.this
    if isinstance(inner, exp.Select) and _keyed(inner) is not None:
        return None
    return (
        "a derived table (FROM (SELECT …)) is refreshed in full unless it only projects and "
        "filters, or has a key: GROUP BY, DISTINCT or a PARTITION BY its windows share"
    )


def outer_join(join: exp.Join) -> bool:
    """Outer, semi and anti joins: a joined row's presence depends on other rows."""
    return bool(join.side) or join.kind not in ("", "INNER", "CROSS")


def _relation_problem(relation: exp.Expr) -> str | None:
    """A change feed belongs to one table, read whole at its latest version."""
    if not isinstance(relation, exp.Table) or not isinstance(relation.this, exp.Identifier):
        return "a FROM item that is not a table is refreshed in full"
    if relation.args.get("version") or relation.args.get("sample"):
        return "time travel and TABLESAMPLE are refreshed in full"
    if relation.args.get("pivots"):
        return "PIVOT is refreshed in full"
    return None


_SELECT_CHECKS: tuple[Callable[[exp.Select], str | None], ...] = (
    _clause_problem,
    _lateral_problem,
    _window_problem,
    _non_deterministic_problem,
    _from_problem,
    _subquery_problem,
)


def _is_aggregate(select: exp.Select) -> bool:
    return bool(select.args.get("group")) or any(
        item.find(exp.AggFunc) for item in select.expressions
    )


def _aggregate_plan(select: exp.Select) -> Plan:
    """A group is updated from its own changed rows only when its keys are all selected."""
    group = select.args.get("group")
    problem = _grouping_problem(group)
    if problem:
        return _full(problem)
    items = [item.unalias() for item in select.expressions]
    select_list = _select_list(items)
    if isinstance(select_list, str):
        return _full(select_list)
    keys, aggregates, expressions = select_list
    if group is None:
        if keys:
            return _full("an aggregate without GROUP BY selects only aggregates")
        return Plan(AGGREGATE, None, (select,), (), tuple(aggregates), tuple(expressions))
    problem = _group_by_problem(select, items, keys)
    if problem:
        return _full(problem)
    return Plan(AGGREGATE, None, (select,), tuple(keys), tuple(aggregates), tuple(expressions))


def _grouping_problem(group: exp.Group | None) -> str | None:
    """Every result row must be one group, so that a changed row touches its own group only."""
    if group is None:
        return None
    if not group.expressions:
        return "GROUP BY () is refreshed in full"
    if any(group.args.get(key) for key in ("rollup", "cube", "grouping_sets", "totals")) or any(
        isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets) for e in group.expressions
    ):
        return (
            "ROLLUP, CUBE and GROUPING SETS are refreshed in full unless each grouping set's "
            "groups can be kept in a stage (no DISTINCT, window or subquery)"
        )
    return None


_SelectList = tuple[list[tuple[int, exp.Expr]], list[Aggregate], list[tuple[int, exp.Expr]]]


def _select_list(items: list[exp.Expr]) -> _SelectList | str:
    """Keys, aggregates and expressions of aggregates are maintained differently, so every item
    must be plainly one of them."""
    keys: list[tuple[int, exp.Expr]] = []
    aggregates: list[Aggregate] = []
    expressions: list[tuple[int, exp.Expr]] = []
    for position, item in enumerate(items):
        if isinstance(item, exp.AggFunc):
            aggregate = _aggregate(item, position, str(position))
            if isinstance(aggregate, str):
                return aggregate
            aggregates.append(aggregate)
        elif item.find(exp.AggFunc):
            combined = _of_aggregates(item, position)
            if isinstance(combined, str):
                return combined
            expressions.append((position, combined[0]))
            aggregates += combined[1]
        elif isinstance(item, exp.Star):
            return f"the select item {item.sql(dialect='spark')} is refreshed in full"
        else:
            keys.append((position, item))
    return keys, aggregates, expressions


def _of_aggregates(item: exp.Expr, position: int) -> tuple[exp.Expr, list[Aggregate]] | str:
    """An item that computes with aggregates (`100 * SUM(a) / SUM(b)`): each aggregate folded
    in a hidden column of its own, and the item as the same expression over those columns."""
    text = item.sql(dialect="spark")
    outside = [c for c in item.find_all(exp.Column) if c.find_ancestor(exp.AggFunc) is None]
    if outside or item.find(exp.Window, exp.Query):
        return f"the select item {text} is refreshed in full"
    combined = item.copy()
    calls = [
        n for n in combined.find_all(exp.AggFunc, bfs=False) if not n.find_ancestor(exp.AggFunc)
    ]
    aggregates = []
    for index, call in enumerate(calls):
        aggregate = _aggregate(call.copy(), position, f"{position}_{index}", in_expression=True)
        if isinstance(aggregate, str):
            return aggregate
        assert aggregate.value is not None
        call.replace(exp.column(aggregate.value, quoted=True))
        aggregates.append(aggregate)
    return combined, aggregates


def _group_by_problem(
    select: exp.Select,
    items: list[exp.Expr],
    keys: list[tuple[int, exp.Expr]],
) -> str | None:
    """The table's rows are matched to their groups by the selected keys, one per GROUP BY."""
    selected = {item.sql(dialect="spark") for _, item in keys}
    aliases = {item.alias_or_name.lower() for item in select.expressions}
    group = select.args["group"]
    for expression in group.expressions:
        if not _is_selected(expression, items, selected, aliases):
            return (
                f"GROUP BY {expression.sql(dialect='spark')} is not in the select list, "
                "so the table is refreshed in full"
            )
    if len(keys) != len(group.expressions):
        return "every selected column must be a GROUP BY expression or an aggregate"
    return None


def _is_selected(
    expression: exp.Expr, items: list[exp.Expr], selected: set[str], aliases: set[str]
) -> bool:
    """GROUP BY may name a selected key by its ordinal, by its alias or by repeating it."""
    if isinstance(expression, exp.Literal) and expression.is_int:
        index = int(expression.name) - 1
        return 0 <= index < len(items) and not isinstance(items[index], exp.AggFunc)
    if isinstance(expression, exp.Column) and not expression.table:
        return expression.sql(dialect="spark") in selected or expression.name.lower() in aliases
    return expression.sql(dialect="spark") in selected


def _aggregate(
    item: exp.AggFunc, position: int, slot: str, in_expression: bool = False
) -> Aggregate | str:
    if not isinstance(item, _SUPPORTED_AGGREGATES) or item.find(exp.Filter):
        return f"aggregate {item.sql(dialect='spark')} is refreshed in full"
    argument = item.this
    if argument is None or argument.find(exp.AggFunc):
        return f"aggregate {item.sql(dialect='spark')} is refreshed in full"
    if isinstance(item, exp.Count):
        if isinstance(argument, exp.Star):
            return Aggregate(COUNT_STAR, position, None, item, slot, in_expression)
        if isinstance(argument, exp.Distinct):
            if len(argument.expressions) != 1:
                return "COUNT(DISTINCT …) of several columns is refreshed in full"
            counted = argument.expressions[0]
            return Aggregate(COUNT_DISTINCT, position, counted, item, slot, in_expression)
        return Aggregate(COUNT, position, argument, item, slot, in_expression)
    if item.expressions:
        return f"aggregate {item.sql(dialect='spark')} is refreshed in full"
    kind = {exp.Sum: SUM, exp.Avg: AVG, exp.Min: MIN, exp.Max: MAX}[type(item)]
    return Aggregate(kind, position, argument, item, slot, in_expression)


def key_name(index: int) -> str:
    """Hidden column: a keyed query's key `index`, kept with each of its rows."""
    return names.hidden(f"key_{index}")
