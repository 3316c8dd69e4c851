"""ROLLUP, CUBE and GROUPING SETS as the grouping sets they mean: a result row is a group of one
set, its grouping expressions outside that set NULL and GROUPING() telling which. So the query
is the UNION ALL, over its sets, of one plain GROUP BY each (see stages)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations, product

from sqlglot import exp

_GROUPINGS = (exp.Rollup, exp.Cube, exp.GroupingSets)


def _text(expression: exp.Expr) -> str:
    return expression.sql(dialect="spark")


@dataclass(frozen=True)
class Sets:
    """The grouping expressions, in the order GROUPING_ID() counts them, and the sets."""

    expressions: tuple[exp.Expr, ...]
    sets: tuple[tuple[exp.Expr, ...], ...]


def grouping_sets(select: exp.Select) -> Sets | None:
    """The grouping sets of a GROUP BY with ROLLUP, CUBE or GROUPING SETS; None without."""
    group = select.args.get("group")
    if group is None:
        return None
    plain = [e for e in group.expressions if not isinstance(e, _GROUPINGS)]
    factors = [_factor(e, select) for e in group.expressions]
    if group.args.get("rollup"):  # GROUP BY a, b WITH ROLLUP
        factors = [_rollup([_resolved(e, select) for e in plain])]
    elif group.args.get("cube"):
        factors = [_cube([_resolved(e, select) for e in plain])]
    elif not any(isinstance(e, _GROUPINGS) for e in group.expressions):
        return None
    sets = tuple(tuple(e for part in combo for e in part) for combo in product(*factors))
    seen: dict[str, exp.Expr] = {}
    for expression in (e for one in sets for e in one):
        seen.setdefault(_text(expression), expression)
    return Sets(tuple(seen.values()), sets)


def _factor(expression: exp.Expr, select: exp.Select) -> list[list[exp.Expr]]:
    """The sets one GROUP BY element contributes, to be crossed with the others'."""
    if isinstance(expression, exp.Rollup):
        return _rollup([_resolved(e, select) for e in expression.expressions])
    if isinstance(expression, exp.Cube):
        return _cube([_resolved(e, select) for e in expression.expressions])
    if isinstance(expression, exp.GroupingSets):
        return [
            [_resolved(e, select) for e in (i.expressions if isinstance(i, exp.Tuple) else [i])]
            for i in expression.expressions
        ]
    return [[_resolved(expression, select)]]


def _rollup(expressions: list[exp.Expr]) -> list[list[exp.Expr]]:
    return [expressions[:size] for size in range(len(expressions), -1, -1)]


def _cube(expressions: list[exp.Expr]) -> list[list[exp.Expr]]:
    return [
        list(chosen)
        for size in range(len(expressions), -1, -1)
        for chosen in combinations(expressions, size)
    ]


def _resolved(expression: exp.Expr, select: exp.Select) -> exp.Expr:
    """A grouping expression as the item it names by ordinal or alias, else itself."""
    items = select.selects
    if isinstance(expression, exp.Literal) and expression.is_int:
        index = int(expression.name) - 1
        return items[index].unalias() if 0 <= index < len(items) else expression
    if isinstance(expression, exp.Column) and not expression.table:
        for item in items:
            if item.alias_or_name.lower() == expression.name.lower():
                return item.unalias()
    return expression


def in_set(
    expression: exp.Expr, sets: Sets, chosen: tuple[exp.Expr, ...], key: Sequence[exp.Expr]
) -> exp.Expr:
    """`expression` (an item or a HAVING) for the groups of the set `chosen`: its grouping
    expressions in the set as `key` (by position), the others NULL, GROUPING() and
    GROUPING_ID() as the numbers they are."""
    members = {_text(e): index for index, e in enumerate(chosen)}
    every = {_text(e) for e in sets.expressions}
    order = [_text(e) for e in sets.expressions]

    def replaced(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Grouping | exp.GroupingId):
            arguments = [_text(a) for a in node.expressions] or order
            bits = [0 if argument in members else 1 for argument in arguments]
            value = sum(bit << (len(bits) - 1 - i) for i, bit in enumerate(bits))
            kind = "TINYINT" if isinstance(node, exp.Grouping) else "BIGINT"
            return exp.cast(exp.Literal.number(value), kind)
        if isinstance(node, exp.AggFunc):
            return node
        text = _text(node)
        if text in members:
            return key[members[text]].copy()
        return exp.Null() if text in every else node

    return expression.copy().transform(replaced)
