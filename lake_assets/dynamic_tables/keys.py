"""The key of a query whose result rows for one key value depend only on the source rows with
that value: its GROUP BY expressions, its DISTINCT columns, or the PARTITION BY its window
functions share. A change then touches only its rows' keys, and those are recomputed."""

from __future__ import annotations

from sqlglot import exp


def _text(expression: exp.Expr) -> str:
    return expression.sql(dialect="spark")


def key_of(select: exp.Select) -> list[exp.Expr] | None:
    """The expressions (over the FROM's rows) that key the result, or None when none does."""
    groups = _group_keys(select)
    if groups is None:
        return None
    windows = list(select.find_all(exp.Window))
    if windows:
        shared = _shared_partition(windows)
        if not shared:
            return None
        if select.args.get("group") and not all(_text(e) in groups for e in shared):
            return None  # a partition over aggregates' results is not a key of the rows read
        return shared
    if groups:
        return list(groups.values())
    items = [item.unalias() for item in select.expressions]
    if select.args.get("distinct") and not any(e.find(exp.AggFunc, exp.Star) for e in items):
        return [item.copy() for item in items]
    return None


def _group_keys(select: exp.Select) -> dict[str, exp.Expr] | None:
    """GROUP BY's expressions by their text (ordinals and aliases resolved); None when some
    grouping is not one key (ROLLUP, CUBE, GROUPING SETS) or groups by an aggregate."""
    group = select.args.get("group")
    if group is None:
        return {}
    if any(group.args.get(key) for key in ("rollup", "cube", "grouping_sets", "totals")):
        return None
    items = {item.alias_or_name.lower(): item.unalias() for item in select.expressions}
    keys: dict[str, exp.Expr] = {}
    for expression in group.expressions:
        if isinstance(expression, exp.Literal) and expression.is_int:
            index = int(expression.name) - 1
            if not 0 <= index < len(select.expressions):
                return None
            expression = select.expressions[index].unalias()
        elif isinstance(expression, exp.Column) and not expression.table:
            aliased = items.get(expression.name.lower())
            if aliased is not None and not isinstance(aliased, exp.Column):
                expression = aliased  # GROUP BY an alias of an expression
        if expression.find(exp.AggFunc, exp.Window, exp.Rollup, exp.Cube, exp.GroupingSets):
            return None
        keys[_text(expression)] = expression.copy()
    return keys


def _shared_partition(windows: list[exp.Window]) -> list[exp.Expr]:
    """The PARTITION BY expressions every window has (in the first one's order)."""
    partitions = [window.args.get("partition_by") or [] for window in windows]
    common = set.intersection(*({_text(e) for e in partition} for partition in partitions))
    return [e.copy() for e in partitions[0] if _text(e) in common]
