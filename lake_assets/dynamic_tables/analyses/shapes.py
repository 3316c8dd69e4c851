"""Why a SELECT cannot be maintained from its sources' changes where it stands: an analysis of
its clauses, joins, subqueries and functions, kept apart from the lowering (lowering.classify)
that uses it."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from lake_assets.dynamic_tables.analyses.keys import join_key, key_of
from lake_assets.sql.determinism import non_deterministic

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


# Clauses a keyed recompute takes: they look at other rows, but only at rows of the same key.
_KEYED_CLAUSES = frozenset({"distinct", "having", "qualify"})


def keyed_keys(select: exp.Select) -> list[exp.Expr] | None:
    """The keys of a SELECT whose rows of one key come from its source rows of that key (GROUP
    BY, DISTINCT, windows with a PARTITION BY over inner joins of tables), or None."""
    for clause, _ in _FULL_CLAUSES:
        if clause not in _KEYED_CLAUSES and select.args.get(clause):
            return None
    for check in (_lateral_problem, _non_deterministic_problem, _subquery_problem, _from_problem):
        if check(select):
            return None
    return key_of(select) or None


def select_problem(select: exp.Select) -> str | None:
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
        if non_deterministic(node):
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
    operators.branches) rather than the delta rule's over inner joins."""
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
    their join key (see operators.branches), so every table must be equal on one."""
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
    if isinstance(inner, exp.Select) and keyed_keys(inner) is not None:
        return None
    return (
        "a derived table (FROM (SELECT …)) is refreshed in full unless it only projects and "
        "filters, or has a key: GROUP BY, DISTINCT or a PARTITION BY its windows share"
    )


def nested_set_operation(query: exp.Expr) -> bool:
    """A set operation in parentheses inside another (`A EXCEPT (B INTERSECT C)`)."""
    return (
        isinstance(query, exp.Subquery)
        and isinstance(query.this, exp.SetOperation)
        and not query.alias
        and isinstance(query.parent, exp.SetOperation)
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
