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
        factors = [_rollup(_units(plain, select))]
    elif group.args.get("cube"):
        factors = [_cube(_units(plain, select))]
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
        return _rollup(_units(expression.expressions, select))
    if isinstance(expression, exp.Cube):
        return _cube(_units(expression.expressions, select))
    if isinstance(expression, exp.GroupingSets):  # which may nest ROLLUP, CUBE and more sets
        return [
            chosen
            for element in expression.expressions
            for chosen in (
                _factor(element, select)
                if isinstance(element, _GROUPINGS)
                else _units([element], select)
            )
        ]
    return [[_resolved(expression.unnest(), select)]]


def _units(elements: list[exp.Expr], select: exp.Select) -> list[list[exp.Expr]]:
    """Each element of a ROLLUP, CUBE or GROUPING SETS as the expressions it groups by: `(a, b)`
    both, `(a)` and `a` the same one, `()` none."""
    units = []
    for element in elements:
        parts = element.expressions if isinstance(element, exp.Tuple) else [element.unnest()]
        units.append([_resolved(part.unnest(), select) for part in parts])
    return units


def _rollup(units: list[list[exp.Expr]]) -> list[list[exp.Expr]]:
    return [_joined(units[:size]) for size in range(len(units), -1, -1)]


def _cube(units: list[list[exp.Expr]]) -> list[list[exp.Expr]]:
    return [
        _joined(chosen)
        for size in range(len(units), -1, -1)
        for chosen in combinations(units, size)
    ]


def _joined(units: Sequence[list[exp.Expr]]) -> list[exp.Expr]:
    return [expression for unit in units for expression in unit]


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
