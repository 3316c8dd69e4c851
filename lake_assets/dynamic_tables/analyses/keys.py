"""The key of a query whose result rows for one key value depend only on the source rows with
that value: its GROUP BY expressions, its DISTINCT columns, or the PARTITION BY its window
functions share (and of those, under a DISTINCT, the ones it selects). A change then touches
only its rows' keys, and those are recomputed."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from lake_assets.sql.subqueries import conjuncts


def _text(expression: exp.Expr) -> str:
    return expression.sql(dialect="spark")


def key_of(select: exp.Select) -> list[exp.Expr] | None:
    """The expressions (over the FROM's rows) that key the result, or None when none does."""
    groups = _group_keys(select)
    if groups is None:
        return None
    items = [item.unalias() for item in select.expressions]
    windows = list(select.find_all(exp.Window))
    if windows:
        key = _shared_partition(windows)
        if select.args.get("group") and not all(_text(e) in groups for e in key):
            return None  # a partition over aggregates' results is not a key of the rows read
    elif groups:
        key = list(groups.values())
    elif select.args.get("distinct") and not any(e.find(exp.AggFunc, exp.Star) for e in items):
        return [item.copy() for item in items]
    else:
        return None
    if select.args.get("distinct"):
        # DISTINCT makes one row of equal rows of several keys: only the key's expressions it
        # selects stay a key (they are equal in rows it merges).
        selected = {_text(item) for item in items}
        key = [e for e in key if _text(e) in selected]
    return key or None


def _group_keys(select: exp.Select) -> dict[str, exp.Expr] | None:
    """GROUP BY's expressions by their text (ordinals and aliases resolved); None when some
    grouping is not one key (ROLLUP, CUBE, GROUPING SETS, a parenthesized list such as
    `GROUP BY ()`) or groups by an aggregate."""
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
            if aliased is not None and _text(aliased) != _text(expression):
                expression = aliased  # GROUP BY an alias of an expression or another column
        if isinstance(expression, exp.Tuple) or expression.find(
            exp.AggFunc, exp.Window, exp.Rollup, exp.Cube, exp.GroupingSets
        ):
            return None
        keys[_text(expression)] = expression.copy()
    return keys


def _shared_partition(windows: list[exp.Window]) -> list[exp.Expr]:
    """The PARTITION BY expressions every window has (in the first one's order)."""
    partitions = [window.args.get("partition_by") or [] for window in windows]
    common = set.intersection(*({_text(e) for e in partition} for partition in partitions))
    return [e.copy() for e in partitions[0] if _text(e) in common]


# A subquery with these reads rows of other keys to decide on one key's (a top-N, say).
_GLOBAL = ("limit", "offset", "order", "qualify")


@dataclass(frozen=True)
class Parameter:
    """An uncorrelated scalar subquery in a WHERE (`x > (SELECT AVG(x) FROM t)`): one value for
    every row, so when it changes, it touches the keys of the rows whose condition it holds
    (`conjunct`, over `rows`: the key rows of the scope that tests it) decides otherwise."""

    query: exp.Select
    conjunct: exp.Expr
    rows: exp.Select
    aliases: frozenset[str]


@dataclass(frozen=True)
class JoinKey:
    """The key of a query whose rows of one key value come from source rows of that value (and
    any rows of tables inner-joined to them): `expression` gives it from a result row, `columns`
    from each keyed table's own rows (by alias, subqueries' tables included), and `scopes` from
    the rows of the other tables, each as a SELECT of the key over the FROM that joins it."""

    expression: exp.Expr
    columns: dict[str, exp.Column]
    scopes: dict[str, exp.Select]
    # Tables a NOT IN reads (null-aware anti joins): one of their rows with a NULL key decides
    # every row, and any of their changes may decide the rows whose key is NULL.
    null_aware: frozenset[str] = frozenset()
    parameters: tuple[Parameter, ...] = ()


def join_key(select: exp.Select) -> JoinKey | None:
    """The key that equalities in the joins' ON and the WHEREs hold equal across the query's
    outer, semi and anti joined tables, its subqueries' tables (correlated by it) and at least one
    of its inner-joined tables, so that the result rows of one key value depend on source rows
    of that value, and on inner-joined tables' rows only through the rows they join. As an
    expression that is the key in every result row: a column of a table no join extends with
    NULLs, else COALESCE over the visible tables' columns. None when there is none. An
    uncorrelated scalar subquery in a WHERE is no scope: it is a Parameter of the query."""
    parameters = _parameters(select)
    inside = {id(s) for query, _, _ in parameters for s in query.find_all(exp.Select)}
    scopes = _scopes(select, inside)
    if scopes is None:
        return None
    order = [alias for aliases in scopes.values() for alias in aliases]
    for members in _equal_columns(list(scopes)):
        names: dict[str, str] = {}
        for alias, name in sorted(members):
            names.setdefault(alias, name)
        found = {alias: exp.column(names[alias], table=alias) for alias in order if alias in names}
        key = _keyed_by(select, scopes, found, parameters)
        if key is not None:
            return key
    return None


def _keyed_by(
    select: exp.Select,
    scopes: dict[exp.Select, list[str]],
    found: dict[str, exp.Column],
    parameters: list[tuple[exp.Select, exp.Select, exp.Expr]],
) -> JoinKey | None:
    """The key of one class of equal columns, or None when it leaves a table unkeyed that the
    key must cover: one no inner join reaches, or every table of a scope that no IN or EXISTS
    of a keyed scope tests (see _tied)."""
    items = scopes[select]
    extended, invisible = _null_extended(select, items)
    outer = extended | invisible
    tied: dict[exp.Select, tuple[exp.Select, exp.Expr]] = {}
    for scope, aliases in scopes.items():
        keyed = {alias for alias in aliases if alias in found}
        if not keyed and scope is not select:
            link = _tied(scope)
            if link is None or not any(a in found for a in scopes.get(link[0], [])):
                return None
            tied[scope] = link
        elif not keyed or not _must_key(scope, aliases) <= keyed:
            return None
    present = [found[a].copy() for a in items if a in found and a not in outer]
    visible = [found[a].copy() for a in items if a in found and a not in invisible]
    if present:
        expression: exp.Expr = present[0]
    elif visible and set(items) <= set(found):
        expression = exp.Coalesce(this=visible[0], expressions=visible[1:])
    else:
        return None  # the rows no table keys would change key as outer joins match them

    def own(scope: exp.Select) -> exp.Expr:
        if scope is select:
            return expression
        return found[next(alias for alias in scopes[scope] if alias in found)]

    others = {}
    for scope, aliases in scopes.items():
        if scope in tied:
            parent, conjunct = tied[scope]
            rows = _key_rows(parent, own(parent)).where(conjunct.copy(), copy=False)
        else:
            rows = _key_rows(scope, own(scope))
        others.update({alias: rows for alias in aliases if alias not in found})
    aware = frozenset(
        table.alias_or_name.lower()
        for scope in scopes
        for conjunct in _where_conjuncts(scope)
        if _not_in(conjunct)
        for table in conjunct.find_all(exp.Table)
    )
    if any(
        scope is not select and not any(a in found for a in scopes[scope])
        for _, scope, _ in parameters
    ):
        return None  # a scope without a key of its own cannot give the rows a parameter decides
    held = tuple(
        Parameter(query, conjunct, _key_rows(scope, own(scope)), _aliases(query))
        for query, scope, conjunct in parameters
    )
    return JoinKey(expression, found, others, aware, held)


def _aliases(query: exp.Select) -> frozenset[str]:
    return frozenset(t.alias_or_name.lower() for t in query.find_all(exp.Table))


def _parameters(select: exp.Select) -> list[tuple[exp.Select, exp.Select, exp.Expr]]:
    """The uncorrelated scalar subqueries ANDed in a WHERE of the query or of its subqueries,
    each with the SELECT that tests it and that conjunct, whose other columns are that SELECT's
    own tables'."""
    found = []
    for scope in select.find_all(exp.Select):
        aliases = {t.alias_or_name.lower() for t in _tables(scope)}
        for conjunct in _where_conjuncts(scope):
            for subquery in conjunct.find_all(exp.Subquery):
                query = subquery.this
                if (
                    isinstance(query, exp.Select)
                    and not isinstance(subquery.parent, exp.In | exp.Exists)
                    and subquery.parent_select is scope
                    and uncorrelated(query)
                    and _own_columns(conjunct, subquery, aliases)
                ):
                    found.append((query, scope, conjunct))
    return found


def uncorrelated(query: exp.Select) -> bool:
    """Whether every column of the subquery names one of its own tables."""
    aliases = _aliases(query)
    return all(c.table and c.table.lower() in aliases for c in query.find_all(exp.Column))


def _own_columns(conjunct: exp.Expr, subquery: exp.Subquery, aliases: set[str]) -> bool:
    """Whether the conjunct's columns outside `subquery` are all of the tables in `aliases`,
    and it holds no other subquery."""
    inside = {id(node) for node in subquery.walk()}
    if any(id(q) not in inside for q in conjunct.find_all(exp.Query)):
        return False
    return all(
        c.table and c.table.lower() in aliases
        for c in conjunct.find_all(exp.Column)
        if id(c) not in inside
    )


def _where_conjuncts(select: exp.Select) -> list[exp.Expr]:
    where = select.args.get("where")
    return list(conjuncts(where.this)) if where is not None else []


def _not_in(conjunct: exp.Expr) -> bool:
    """`x NOT IN (SELECT …)`: true for no row once the subquery has a NULL, and NULL for a NULL
    `x` once it has any row (Spark's null-aware anti join)."""
    return isinstance(conjunct, exp.Not) and isinstance(conjunct.this.unnest(), exp.In)


def _tied(scope: exp.Select) -> tuple[exp.Select, exp.Expr] | None:
    """The SELECT whose WHERE tests `scope` with IN or EXISTS, ANDed at its top, and that test:
    a change to the subquery's tables touches the keys of the rows it lets through, whatever
    columns tie the two."""
    parent = scope.parent_select
    if parent is None:
        return None
    for conjunct in _where_conjuncts(parent):
        query = conjunct.args.get("query") if isinstance(conjunct, exp.In) else None
        tested = query.unnest() if query is not None else None
        if isinstance(conjunct, exp.Exists):
            tested = conjunct.this
        if tested is scope:
            return parent, conjunct
    return None


def _key_rows(scope: exp.Select, key: exp.Expr) -> exp.Select:
    """The key of a scope's joined rows, read without its subqueries and the conditions that
    reach outside it: more rows than it reads, so every key it could read is among them."""
    rows = exp.select(key.copy()).from_((scope.args.get("from_") or scope.args["from"]).copy())
    rows.set("joins", [join.copy() for join in scope.args.get("joins") or []] or None)
    aliases = {table.alias_or_name.lower() for table in _tables(scope)}
    kept = [
        conjunct.copy()
        for conjunct in _where_conjuncts(scope)
        if not conjunct.find(exp.Query)
        and all(c.table.lower() in aliases for c in conjunct.find_all(exp.Column))
    ]  # fmt: skip
    return rows.where(exp.and_(*kept)) if kept else rows


def _tables(select: exp.Select) -> list[exp.Table]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this] if from_ is not None else []
    return items + [join.this for join in select.args.get("joins") or []]


def _scopes(select: exp.Select, parameters: set[int]) -> dict[exp.Select, list[str]] | None:
    """The query's SELECTs (itself and its subqueries, but not those of its `parameters`) with
    the aliases of the tables each reads; None unless every FROM item is a table and every alias
    names one table."""
    scopes: dict[exp.Select, list[str]] = {}
    seen: set[str] = set()
    for scope in select.find_all(exp.Select, bfs=True):
        if id(scope) in parameters:
            continue
        tables = _tables(scope)
        if not tables or not all(isinstance(t, exp.Table) for t in tables):
            return None
        aliases = [t.alias_or_name.lower() for t in tables]
        if seen & set(aliases) or len(set(aliases)) != len(aliases):
            return None
        if scope is not select and (
            any(scope.args.get(part) for part in _GLOBAL) or scope.find(exp.Window)
        ):
            return None  # which rows it keeps depends on rows of every key
        seen.update(aliases)
        scopes[scope] = aliases
    return scopes


def _equal_columns(scopes: list[exp.Select]) -> list[set[tuple[str, str]]]:
    """Classes of qualified columns that a join's ON or a WHERE holds equal (`a.x = b.y`
    conjuncts): a row a scope reads has equal values in each class."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    for select in scopes:
        where = select.args.get("where")
        conditions = [join.args.get("on") for join in select.args.get("joins") or []]
        for condition in filter(None, [*conditions, where.this if where is not None else None]):
            for conjunct in conjuncts(condition):
                sides = _equal_sides(conjunct)
                if sides is not None:
                    left, right = ((side.table.lower(), side.name.lower()) for side in sides)
                    parent[root(left)] = root(right)
    classes: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for node in list(parent):
        classes.setdefault(root(node), set()).add(node)
    return sorted(classes.values(), key=sorted)


def _equal_sides(conjunct: exp.Expr) -> tuple[exp.Column, exp.Column] | None:
    """The two qualified columns a conjunct holds equal: `a.x = b.y`, or `a.x IN (SELECT b.y
    …)`, which meets only rows of `b` whose `y` is `a.x` (a row of the subquery per row read, or
    per group when it groups by `b.y`)."""
    if isinstance(conjunct, exp.EQ):
        left, right = conjunct.this, conjunct.expression
    elif isinstance(conjunct, exp.In) or _not_in(conjunct):
        found = _in_sides(conjunct if isinstance(conjunct, exp.In) else conjunct.this.unnest())
        if found is None:
            return None
        left, right = found
    else:
        return None
    columns = [side for side in (left, right) if isinstance(side, exp.Column) and side.table]
    return (columns[0], columns[1]) if len(columns) == 2 else None


def _in_sides(condition: exp.In) -> tuple[exp.Expr, exp.Expr] | None:
    query = condition.args.get("query")
    inner = query.unnest() if query is not None else None
    if not isinstance(inner, exp.Select) or len(inner.expressions) != 1:
        return None
    left, right = condition.this, inner.expressions[0].unalias()
    group = inner.args.get("group")
    grouped = group is not None and any(e == right for e in group.expressions)
    own = [agg for agg in inner.find_all(exp.AggFunc) if agg.find_ancestor(exp.Select) is inner]
    return None if own and not grouped else (left, right)


def _must_key(select: exp.Select, items: list[str]) -> set[str]:
    """The tables a key must cover: those outer, semi and anti joins add, and all of them once
    a RIGHT or FULL join extends the inner side with NULLs too."""
    sides = {(join.side or "").upper() for join in select.args.get("joins") or []}
    if sides & {"RIGHT", "FULL"}:
        return set(items)
    extended, invisible = _null_extended(select, items)
    return extended | invisible


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
