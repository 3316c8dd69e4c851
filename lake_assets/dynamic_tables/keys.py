"""The key of a query whose result rows for one key value depend only on the source rows with
that value: its GROUP BY expressions, its DISTINCT columns, or the PARTITION BY its window
functions share. A change then touches only its rows' keys, and those are recomputed."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class JoinKey:
    """The key of a FROM whose joins may be outer, semi or anti: `expression` gives it from a
    joined row, and `columns` give it from each table's own rows (by the table's alias)."""

    expression: exp.Expr
    columns: dict[str, exp.Column]


def join_key(select: exp.Select) -> JoinKey | None:
    """The key that equalities in the joins' ON and the WHERE hold equal across all the FROM's
    tables, so that the joined rows of one key value come from source rows of that value only;
    as an expression that is the key in every joined row: a column of a table no join extends
    with NULLs, else COALESCE over the visible tables' columns. None when there is none."""
    items = _from_items(select)
    if items is None:
        return None
    extended, invisible = _null_extended(select, items)
    for members in _equal_columns(select):
        found: dict[str, exp.Column] = {}
        for alias, name in sorted(members):
            found.setdefault(alias, exp.column(name, table=alias))
        if set(found) == set(items):
            columns = {alias: found[alias] for alias in items}
            present = [columns[a] for a in items if a not in extended | invisible]
            visible = [columns[a].copy() for a in items if a not in invisible]
            expression = (
                present[0].copy()
                if present
                else exp.Coalesce(this=visible[0], expressions=visible[1:])
            )
            return JoinKey(expression, columns)
    return None


def _from_items(select: exp.Select) -> list[str] | None:
    """The FROM's tables by alias, in order; None unless every item is a distinct table."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        return None
    relations = [from_.this, *(join.this for join in select.args.get("joins") or [])]
    if not all(isinstance(relation, exp.Table) for relation in relations):
        return None
    aliases = [relation.alias_or_name.lower() for relation in relations]
    return aliases if len(set(aliases)) == len(aliases) else None


def _equal_columns(select: exp.Select) -> list[set[tuple[str, str]]]:
    """Classes of qualified columns that a join's ON or the WHERE holds equal (`a.x = b.y`
    conjuncts): a joined row has equal values in each class."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    where = select.args.get("where")
    conditions = [join.args.get("on") for join in select.args.get("joins") or []]
    for condition in [*conditions, where.this if where is not None else None]:
        conjuncts = condition.flatten() if isinstance(condition, exp.And) else [condition]
        for conjunct in conjuncts:
            if not isinstance(conjunct, exp.EQ):
                continue
            sides = [conjunct.this, conjunct.expression]
            if all(isinstance(side, exp.Column) and side.table for side in sides):
                left, right = ((side.table.lower(), side.name.lower()) for side in sides)
                parent[root(left)] = root(right)
    classes: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for node in list(parent):
        classes.setdefault(root(node), set()).add(node)
    return list(classes.values())


def _null_extended(select: exp.Select, items: list[str]) -> tuple[set[str], set[str]]:
    """The tables an outer join may extend with NULLs, and those a semi or anti join only
    tests (their columns are not in the result)."""
    extended: set[str] = set()
    invisible: set[str] = set()
    for position, join in enumerate(select.args.get("joins") or [], start=1):
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        if kind in ("SEMI", "ANTI"):
            invisible.add(items[position])
        elif side in ("LEFT", "FULL"):
            extended.add(items[position])
        if side in ("RIGHT", "FULL") and kind not in ("SEMI", "ANTI"):
            extended.update(items[:position])
    return extended, invisible
