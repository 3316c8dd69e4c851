"""Parts of a query that the rest reads as tables of their own (stages): a derived table beside
other tables or that is a top-N, an uncorrelated scalar subquery in the WHERE or the SELECT list
(an aggregate without GROUP BY: exactly one row, joined to every row), the groups a HAVING with
a subquery filters, and the groups of each grouping set of a ROLLUP, CUBE or GROUPING SETS (see
grouping_sets). Each stage is kept in a hidden table maintained by its own plan (see
operators.base.Stage); the query then reads the
stages as it reads its sources, their change data feeds included, so its own rule holds over
them: when a scalar moves, the rows it decides otherwise are its change."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlglot import exp

from lake_assets.core import names
from lake_assets.dynamic_tables.analyses.grouping_sets import Sets, grouping_sets, in_set
from lake_assets.dynamic_tables.analyses.keys import uncorrelated

STAGE_PREFIX = names.hidden("stage_")
# The one column of a scalar subquery's stage.
VALUE = names.hidden("value")
# The alias a stage of groups is read under, and its columns: the query's items, what a HAVING
# tests, a grouping set's keys and aggregates, and the rows of the set without keys.
_GROUPS = names.hidden("groups")
_GROUP_ROWS = names.hidden("n")


def _item(index: int) -> str:
    return names.hidden(f"c_{index}")


def _tested(index: int) -> str:
    return names.hidden(f"having_{index}")


def _key(index: int) -> str:
    return names.hidden(f"k_{index}")


def _aggregated(index: int) -> str:
    return names.hidden(f"a_{index}")


@dataclass(frozen=True)
class Staged:
    """`query` reads each part of `parts` as the table its name names."""

    query: exp.Query
    parts: tuple[tuple[str, exp.Query], ...]


def staged(query: exp.Expr) -> Staged | None:
    """The query with its derived tables, uncorrelated scalar subqueries and HAVING groups read
    from stages, or None when it has none it can stage."""
    if not isinstance(query, exp.Select) or any(
        query.args.get(clause) for clause in ("order", "limit", "offset")
    ):
        return None  # a top-N stages the rows it ranks (see top)
    parts: list[tuple[str, exp.Query]] = []
    sets = grouping_sets(query)
    if sets is not None:
        union = _sets_staged(query, sets, parts)
        return Staged(union, tuple(parts)) if union is not None else None
    select = _groups_staged(query.copy(), parts)
    if select is None or not _derived_staged(select, parts):
        return None
    _scalars_staged(select, parts)
    return Staged(select, tuple(parts)) if parts else None


def stage_name(query: exp.Expr) -> str:
    """A stage is named by its text, so that a part repeated is kept once."""
    digest = hashlib.sha256(query.sql(dialect="spark").encode()).hexdigest()[:12]
    return f"{STAGE_PREFIX}{digest}"


def _read_as(name: str, alias: str) -> exp.Table:
    return exp.Table(
        this=exp.to_identifier(name), alias=exp.TableAlias(this=exp.to_identifier(alias))
    )


def _derived_staged(select: exp.Select, parts: list[tuple[str, exp.Query]]) -> bool:
    """Derived tables beside other FROM items, and a top-N one (ORDER BY … LIMIT), become
    stages; False when one's columns have no names of their own to be read by."""
    from_ = select.args.get("from_") or select.args.get("from")
    joins = select.args.get("joins") or []
    if from_ is None:
        return True
    for relation in [from_.this, *(join.this for join in joins)]:
        if not isinstance(relation, exp.Subquery) or not isinstance(relation.this, exp.Query):
            continue
        if not joins and not relation.this.args.get("limit"):
            continue
        alias = relation.args.get("alias")
        items = relation.this.selects
        if alias is None or alias.columns or any(map(_unnamed, items)):
            return False
        if len({item.output_name.lower() for item in items}) != len(items):
            return False
        part = relation.this.copy()
        name = stage_name(part)
        parts.append((name, part))
        relation.replace(_read_as(name, alias.name))
    return True


def _scalar(subquery: exp.Subquery, scope: exp.Select) -> bool:
    """An uncorrelated aggregate without GROUP BY, one item, read by `scope` as a value: it has
    exactly one row."""
    query = subquery.this
    if not isinstance(query, exp.Select) or subquery.parent_select is not scope:
        return False
    if isinstance(subquery.parent, exp.In | exp.Exists) or len(query.selects) != 1:
        return False
    if any(query.args.get(clause) for clause in ("group", "having", "limit", "offset", "qualify")):
        return False
    item = query.selects[0]
    loose = [c for c in item.find_all(exp.Column) if c.find_ancestor(exp.AggFunc) is None]
    return (
        item.find(exp.AggFunc) is not None
        and not loose
        and not query.find(exp.Window)
        and (uncorrelated(query) or all(map(_derived_column, query.find_all(exp.Column))))
    )


def _derived_column(column: exp.Column) -> bool:
    """Whether an unqualified column is one a derived table of its own SELECT gives (Spark
    resolves it there first) or an alias of its items (as GROUP BY may name one), or a
    qualified one names a table of that SELECT."""
    scope = column.parent_select
    if scope is None:
        return False
    relations = [scope.args.get("from_") or scope.args.get("from")]
    relations += [join for join in scope.args.get("joins") or []]
    items = [relation.this for relation in relations if relation is not None]
    if column.table:
        return column.table.lower() in {item.alias_or_name.lower() for item in items}
    given = {name.lower() for name in scope.named_selects} | {
        name.lower()
        for item in items
        if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query)
        for name in item.this.named_selects
    }
    return column.name.lower() in given


def _scalars_staged(select: exp.Select, parts: list[tuple[str, exp.Query]]) -> None:
    """Each scalar subquery of the WHERE and the SELECT list becomes a one-row stage joined to
    every row, and the subquery its value; a query without FROM (a row of scalars) reads the
    first stage as its FROM."""
    where = select.args.get("where")
    within = [*select.expressions, *([where] if where is not None else [])]
    found = [subquery for part in within for subquery in part.find_all(exp.Subquery)]
    for subquery in found:
        if not _scalar(subquery, select):
            continue
        part = subquery.this.copy()
        part.set("expressions", [exp.alias_(part.selects[0].unalias(), VALUE)])
        name = stage_name(part)
        alias = names.hidden(f"scalar_{len(parts)}")
        parts.append((name, part))
        subquery.replace(exp.column(VALUE, table=alias))
        if select.args.get("from_") or select.args.get("from"):
            select.join(_read_as(name, alias), join_type="CROSS", copy=False)
        else:
            select.from_(_read_as(name, alias), copy=False)


def _groups_staged(select: exp.Select, parts: list[tuple[str, exp.Query]]) -> exp.Select | None:
    """A HAVING that tests its groups against scalar subqueries: the groups (with what the
    HAVING tests of them) become a stage, and the HAVING a WHERE over it; None when a subquery
    of the HAVING is no such scalar."""
    having = select.args.get("having")
    if having is None or not having.find(exp.Query):
        return select
    if not _groups_rewritable(select):
        return None
    if not all(_scalar(subquery, select) for subquery in having.find_all(exp.Subquery)):
        return None
    groups = select.copy()
    groups.set("having", None)
    items = [exp.alias_(item.unalias(), _item(i)) for i, item in enumerate(select.selects)]
    condition = having.this.copy()
    tested = [
        node
        for node in condition.find_all(exp.AggFunc, exp.Column)
        if not node.find_ancestor(exp.AggFunc, exp.Subquery)
    ]
    given = {item.unalias().sql(dialect="spark"): i for i, item in enumerate(select.selects)}
    for index, node in enumerate(tested):
        position = given.get(node.sql(dialect="spark"))
        if position is None:  # a key repeated would not be one GROUP BY expression per item
            items.append(exp.alias_(node.copy(), _tested(index)))
        name = _tested(index) if position is None else _item(position)
        node.replace(exp.column(name, table=_GROUPS))
    groups.set("expressions", items)
    name = stage_name(groups)
    parts.append((name, groups))
    outer_items = [
        exp.alias_(exp.column(_item(i), table=_GROUPS), item.output_name)
        for i, item in enumerate(select.selects)
    ]
    return exp.select(*outer_items).from_(_read_as(name, _GROUPS)).where(condition)


def _unnamed(item: exp.Expr) -> bool:
    """An item without a name of its own (`SUM(x)`, not `a` or `SUM(x) AS s`): Spark names its
    column after its expression, which a query over stages would not have, so the table's
    column would be named otherwise than the query says; such an item is not rewritten."""
    return not item.output_name


def _groups_rewritable(select: exp.Select) -> bool:
    """Whether the query's items can be read from stages of its groups: no DISTINCT, QUALIFY or
    WINDOW clause (which read more than the groups), and every item named."""
    clauses = ("distinct", "qualify", "windows")
    return not any(map(select.args.get, clauses)) and not any(map(_unnamed, select.selects))


def _sets_staged(
    select: exp.Select, sets: Sets, parts: list[tuple[str, exp.Query]]
) -> exp.Query | None:
    """ROLLUP, CUBE and GROUPING SETS as a UNION ALL over their grouping sets, each set's groups
    (its keys and every aggregate the query computes) a stage; the set without keys is an
    aggregate of every row, kept only when there are rows."""
    having = select.args.get("having")
    if not _groups_rewritable(select) or select.find(exp.Window):
        return None
    if having is not None and having.find(exp.Query):
        return None
    calls: dict[str, exp.Expr] = {}
    for node in select.find_all(exp.AggFunc):
        if not isinstance(node, exp.Grouping | exp.GroupingId) and not node.find_ancestor(
            exp.AggFunc
        ):
            calls.setdefault(node.sql(dialect="spark"), node)
    slots = {text: exp.column(_aggregated(i), table=_GROUPS) for i, text in enumerate(calls)}

    def folded(node: exp.Expr) -> exp.Expr:
        slot = slots.get(node.sql(dialect="spark")) if isinstance(node, exp.AggFunc) else None
        return slot.copy() if slot is not None else node

    branches = []
    for chosen in sets.sets:
        groups = select.copy()
        groups.set("having", None)
        items = [exp.alias_(e.copy(), _key(i)) for i, e in enumerate(chosen)]
        items += [exp.alias_(call.copy(), _aggregated(i)) for i, call in enumerate(calls.values())]
        if chosen:
            groups.set("group", exp.Group(expressions=[e.copy() for e in chosen]))
        else:
            groups.set("group", None)
            items.append(exp.alias_(exp.Count(this=exp.Star()), _GROUP_ROWS))
        groups.set("expressions", items)
        name = stage_name(groups)
        parts.append((name, groups))
        key = [exp.column(_key(i), table=_GROUPS) for i in range(len(chosen))]
        outer = [
            exp.alias_(
                in_set(item.unalias().transform(folded), sets, chosen, key), item.output_name
            )
            for item in select.selects
        ]
        conditions = [in_set(having.this.transform(folded), sets, chosen, key)] if having else []
        if not chosen:
            conditions.append(exp.column(_GROUP_ROWS, table=_GROUPS) > 0)
        branch = exp.select(*outer).from_(_read_as(name, _GROUPS))
        if conditions:
            branch = branch.where(exp.and_(*conditions))
        if any(c.table != _GROUPS for c in branch.find_all(exp.Column)):
            return None  # a column that is no grouping expression: Spark refuses the query
        branches.append(branch)
    union: exp.Query = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=False)
    return union
