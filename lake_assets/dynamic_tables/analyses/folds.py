"""The aggregates a SELECT list folds (COUNT, SUM, AVG, MIN, MAX and expressions of them), each
with the hidden state columns it keeps, and why a grouping cannot be folded group by group."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from lake_assets.core import names

COUNT_STAR, COUNT, COUNT_DISTINCT, SUM, AVG, MIN, MAX = (
    "COUNT(*)", "COUNT", "COUNT(DISTINCT)", "SUM", "AVG", "MIN", "MAX",
)  # fmt: skip

_SUPPORTED_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


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


def is_aggregate(select: exp.Select) -> bool:
    return bool(select.args.get("group")) or any(
        item.find(exp.AggFunc) for item in select.expressions
    )


def grouping_problem(group: exp.Group | None) -> str | None:
    """Every result row must be one group, so that a changed row touches its own group only."""
    if group is None:
        return None
    if group.args.get("all"):
        return "GROUP BY ALL is refreshed in full: list the grouping expressions instead"
    if all(isinstance(e, exp.Tuple) and not e.expressions for e in group.expressions):
        return "GROUP BY () is refreshed in full"
    if any(group.args.get(key) for key in ("rollup", "cube", "grouping_sets", "totals")) or any(
        isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets) for e in group.expressions
    ):
        return (
            "ROLLUP, CUBE and GROUPING SETS are refreshed in full unless each grouping set's "
            "groups can be kept in a stage (no DISTINCT, window or subquery, and every "
            "computed item named with AS)"
        )
    return None


_SelectList = tuple[list[tuple[int, exp.Expr]], list[Aggregate], list[tuple[int, exp.Expr]]]


def select_list(items: list[exp.Expr]) -> _SelectList | str:
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


def group_by_problem(
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
    if isinstance(argument, exp.Distinct):
        # The extremes of the distinct values are the extremes of all; a sum or an average of
        # them cannot follow a changed row, which may or may not be the last of its value.
        if kind in (SUM, AVG) or len(argument.expressions) != 1:
            return f"aggregate {item.sql(dialect='spark')} is refreshed in full"
        argument = argument.expressions[0]
    return Aggregate(kind, position, argument, item, slot, in_expression)
