"""Subqueries in WHERE as the joins that mean the same, so that a dynamic table with them refreshes
like one with joins: `EXISTS (SELECT … FROM d WHERE c)` keeps the rows that some row of d meets
with c, a LEFT SEMI JOIN d ON c; `NOT EXISTS` keeps those no row meets, a LEFT ANTI JOIN (NULLs
alike: a condition that is NULL meets nothing in both); `e IN (SELECT d.x FROM d WHERE c)` is the
semi join ON e = d.x AND c (a NULL `e` or `d.x` matches nothing, and the row is dropped either
way). Only conditions ANDed at the top of WHERE are rewritten, each a subquery of one table
whose columns are all qualified (without a schema, an unqualified one could be either side's);
anything else stays. NOT IN stays as written, for Spark's null-aware anti join (see
keys.join_key)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlglot import exp

from lake_assets.sql.subqueries import conjuncts

# The parts a subquery may have to become a join: any other (GROUP BY, LIMIT, …) changes which
# rows match once its WHERE is the join's condition.
_PLAIN = frozenset({"expressions", "from_", "from", "where", "distinct"})
# The parts a derived table may have to merge into the query that reads it.
_MERGEABLE = frozenset({"expressions", "from_", "from", "joins", "where"})


def merged(query: exp.Expr) -> exp.Expr:
    """`SELECT … FROM (SELECT … FROM … WHERE …) AS d …` as the one SELECT it means: the derived
    table's columns replaced by its expressions, its FROM, joins and WHERE taken in. Only when
    the derived table is the whole FROM and only projects and filters, and every outer select
    item keeps its name (an alias or a bare column): an unnamed expression's name would change."""
    if not isinstance(query, exp.Select) or query.args.get("joins"):
        return query
    from_ = query.args.get("from_") or query.args.get("from")
    derived = from_.this if from_ is not None else None
    if not isinstance(derived, exp.Subquery) or not isinstance(derived.this, exp.Select):
        return query
    inner = derived.this
    if any(value for part, value in inner.args.items() if part not in _MERGEABLE):
        return query
    if inner.find(exp.AggFunc, exp.Window, exp.Star) or query.find(exp.Star):
        return query
    if any(nested is not inner for nested in inner.find_all(exp.Query)):
        return query
    if any(nested not in (query, derived, inner) for nested in query.find_all(exp.Query)):
        return query
    outputs = _outputs(derived)
    if outputs is None or not all(
        isinstance(item, exp.Alias | exp.Column) for item in query.expressions
    ):
        return query
    select = query.copy()
    select.set(
        "expressions",
        [
            item if isinstance(item, exp.Alias) else exp.alias_(item, item.name)
            for item in select.expressions
        ],
    )
    select.set("from_", inner.args.get("from_") or inner.args.get("from"))
    for column in list(select.find_all(exp.Column)):
        expression = outputs.get(column.name.lower())
        if expression is None:
            return query
        column.replace(exp.paren(expression.copy()) if not isinstance(expression, exp.Column)
                       else expression.copy())  # fmt: skip
    select.set("joins", inner.args.get("joins"))
    conditions = [w.this for w in (inner.args.get("where"), select.args.get("where")) if w]
    select.set("where", exp.Where(this=exp.and_(*conditions)) if conditions else None)
    return select


def _outputs(derived: exp.Subquery) -> dict[str, exp.Expr] | None:
    """The derived table's columns by name: its column list's, else its items' own names."""
    items = derived.this.expressions
    names = [c.name for c in derived.args["alias"].columns] if derived.args.get("alias") else []
    names = names or [item.alias_or_name for item in items]
    if len(names) != len(items) or len({n.lower() for n in names}) != len(names):
        return None
    return {name.lower(): item.unalias() for name, item in zip(names, items, strict=True)}


def qualified(query: exp.Expr, columns: Mapping[str, Collection[str]]) -> exp.Expr:
    """`query` with the unqualified columns of its join conditions and WHERE, subqueries there
    included, named by the table in scope that has them (a subquery's own first, as Spark
    resolves them); `columns` are the sources' columns by table name. A name no table or
    several tables in scope have is left as written."""
    if not isinstance(query, exp.Select) or not columns:
        return query
    select = query.copy()
    conditions = [join.args.get("on") for join in select.args.get("joins") or []]
    conditions.append(select.args.get("where"))
    for condition in filter(None, conditions):
        for column in list(condition.find_all(exp.Column)):
            _qualify(column, [_scope(s, columns) for s in _enclosing(column, select)])
    return select


def _enclosing(node: exp.Expr, top: exp.Select) -> list[exp.Select]:
    """The SELECTs around `node`, innermost first, up to `top`."""
    chain: list[exp.Select] = []
    scope = node.find_ancestor(exp.Select)
    while scope is not None:
        chain.append(scope)
        if scope is top:
            break
        scope = scope.find_ancestor(exp.Select)
    return chain


def distinct_aliases(query: exp.Expr) -> exp.Expr:
    """`query` with every table of a subquery under an alias no other table in it has: inside
    the subquery its name hid the outer one's, so the columns qualified by it there are its own.
    Then each alias names one table occurrence, whichever scope reads the column."""
    if not isinstance(query, exp.Select):
        return query
    select = query.copy()
    taken: set[str] = set()
    for scope in select.find_all(exp.Select, bfs=True):
        for table in _tables(scope):
            alias = table.alias_or_name.lower()
            if alias in taken and scope is not select:
                fresh = _fresh(alias, taken)
                for column in scope.find_all(exp.Column):
                    if column.table.lower() == alias and _owner(column, alias) is scope:
                        column.set("table", exp.to_identifier(fresh))
                table.set("alias", exp.TableAlias(this=exp.to_identifier(fresh)))
                alias = fresh
            taken.add(alias)
    return select


def _tables(select: exp.Select) -> list[exp.Table]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this] if from_ is not None else []
    items += [join.this for join in select.args.get("joins") or []]
    return [item for item in items if isinstance(item, exp.Table)]


def _owner(column: exp.Column, alias: str) -> exp.Select | None:
    """The innermost SELECT around `column` that reads a table under `alias`."""
    scope = column.find_ancestor(exp.Select)
    while scope is not None:
        if any(table.alias_or_name.lower() == alias for table in _tables(scope)):
            return scope
        scope = scope.find_ancestor(exp.Select)
    return None


def _fresh(alias: str, taken: set[str]) -> str:
    number = 2
    while f"{alias}_{number}" in taken:
        number += 1
    return f"{alias}_{number}"


def _scope(select: exp.Select, columns: Mapping[str, Collection[str]]) -> dict[str, set[str]]:
    """The columns of each table a SELECT reads directly, by the table's alias."""
    return {
        table.alias_or_name.lower(): {c.lower() for c in columns.get(table.name.lower(), ())}
        for table in _tables(select)
    }


def _qualify(column: exp.Column, scopes: list[dict[str, set[str]]]) -> None:
    if column.table or not isinstance(column.this, exp.Identifier):
        return
    for scope in scopes:
        owners = [alias for alias, names in scope.items() if column.name.lower() in names]
        if len(owners) == 1:
            column.set("table", exp.to_identifier(owners[0]))
        if owners:
            return


def decorrelated(query: exp.Expr) -> exp.Expr:
    """`query` with the subqueries of its WHERE that are semi or anti joins written as joins."""
    if not isinstance(query, exp.Select) or query.args.get("where") is None:
        return query
    select = query.copy()
    kept: list[exp.Expr] = []
    for condition in conjuncts(select.args["where"].this):
        join = _as_join(condition)
        if join is None:
            kept.append(condition)
        else:
            select.append("joins", join)
    if len(kept) == len(list(conjuncts(query.args["where"].this))):
        return query
    for join in select.args.get("joins") or []:
        if not (join.args.get("on") or join.args.get("using") or join.side or join.kind):
            join.set("kind", "CROSS")  # `FROM a, b SEMI JOIN d` would join b and d alone
    select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    return select


def _as_join(condition: exp.Expr) -> exp.Join | None:
    """The semi or anti join `condition` means, or None when it is not one we can write."""
    negated = isinstance(condition, exp.Not)
    inner = condition.this.unnest() if negated else condition
    if isinstance(inner, exp.Exists):
        return _join(inner.this, None, "ANTI" if negated else "SEMI")
    if isinstance(inner, exp.In) and not negated and inner.args.get("query") is not None:
        if isinstance(inner.this, exp.Tuple) or inner.this.find(exp.Query):
            return None
        return _join(inner.args["query"].unnest(), inner.this, "SEMI")
    return None


def _join(query: exp.Expr, left: exp.Expr | None, kind: str) -> exp.Join | None:
    if not isinstance(query, exp.Select):
        return None
    if any(value for part, value in query.args.items() if part not in _PLAIN):
        return None
    from_ = query.args.get("from_") or query.args.get("from")
    table = from_.this if from_ is not None else None
    if not isinstance(table, exp.Table):
        return None
    if any(inner is not query for inner in query.find_all(exp.Query)):
        return None
    if query.find(exp.AggFunc, exp.Window):
        return None  # an aggregate answers one row whatever matches
    if any(not column.table for column in query.find_all(exp.Column)):
        return None
    conditions = []
    if left is not None:
        if len(query.expressions) != 1:
            return None
        conditions.append(exp.EQ(this=left.copy(), expression=query.expressions[0].unalias()))
    where = query.args.get("where")
    if where is not None:
        conditions.append(where.this.copy())
    if not conditions:
        return None
    scan = table.copy()
    if not scan.alias:
        scan.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
    return exp.Join(this=scan, on=exp.and_(*conditions), side="LEFT", kind=kind)
