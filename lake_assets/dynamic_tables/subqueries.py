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


def inlined(query: exp.Expr) -> exp.Expr:
    """`WITH c AS (…) SELECT … FROM c` as the query with each reference to a CTE written as the
    derived table it stands for (Spark inlines CTEs too), so that the rules for derived tables
    apply; a recursive WITH stays."""
    with_ = query.args.get("with_") or query.args.get("with")
    if with_ is None or with_.args.get("recursive"):
        return query
    result = query.copy()
    result.set("with_", None)
    result.set("with", None)
    bodies: dict[str, exp.CTE] = {}
    for cte in with_.expressions:
        body = cte.copy()
        _substitute(body.this, bodies)
        bodies[cte.alias_or_name.lower()] = body
    _substitute(result, bodies)
    return result


def _substitute(query: exp.Expr, bodies: dict[str, exp.CTE]) -> None:
    """Each table reference of `query` that names a CTE of `bodies`, replaced by its body."""
    for table in list(query.find_all(exp.Table)):
        cte = bodies.get(table.name.lower()) if not table.db else None
        if cte is None or not isinstance(table.this, exp.Identifier):
            continue
        alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
        names = cte.args["alias"].columns if cte.args.get("alias") else []
        if names:
            alias.set("columns", [name.copy() for name in names])
        table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))


def merged(query: exp.Expr) -> exp.Expr:
    """`SELECT … FROM (SELECT … FROM … WHERE …) AS d …` as the one SELECT it means: the derived
    table's columns replaced by its expressions, its FROM, joins and WHERE taken in. Only when
    the derived table only projects and filters, and every outer select item keeps its name (an
    alias or a bare column): an unnamed expression's name would change. A derived table that is
    the whole FROM may join tables; one inner-joined with others reads one table. Derived
    tables inside are merged first."""
    if not isinstance(query, exp.Select):
        return query
    inside = [item for item in _from_items(query) if isinstance(item, exp.Subquery)]
    if any(isinstance(item.this, exp.Select) for item in inside):
        query = query.copy()
        for item in _from_items(query):
            if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Select):
                item.set("this", merged(item.this))
    if query.args.get("joins"):
        return _merged_in_joins(query)
    return _merged_whole(query)


def _from_items(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this] if from_ is not None else []
    return items + [join.this for join in select.args.get("joins") or []]


def _merged_in_joins(query: exp.Select) -> exp.Select:
    """Each derived table of one table that an inner join reads, merged (see merged)."""
    from_ = query.args.get("from_") or query.args.get("from")
    inner_joined = [join for join in query.args["joins"] if not join.side and not join.kind]
    for holder in filter(None, [from_, *inner_joined]):
        derived = holder.this
        if isinstance(derived, exp.Subquery):
            merged_query = _merged_one(query, derived)
            if merged_query is not None:
                return _merged_in_joins(merged_query)
    return query


def _merged_one(query: exp.Select, derived: exp.Subquery) -> exp.Select | None:
    """The query with `derived` (a projection and filter of one table) written as that table
    under the derived table's alias, or None when it is not one."""
    inner = derived.this
    if not isinstance(inner, exp.Select) or not _plain(inner, query, derived):
        return None
    if _reads_subqueries(inner):
        return None  # beside joins, a subquery's correlation could name another FROM item
    table = (inner.args.get("from_") or inner.args["from"]).this
    outputs = _outputs(derived)
    if not isinstance(table, exp.Table) or inner.args.get("joins") or outputs is None:
        return None
    alias = derived.alias_or_name.lower()
    own = table.alias_or_name.lower()
    unqualified = {c.name.lower() for c in query.find_all(exp.Column) if not c.table}
    if unqualified & set(outputs):
        return None  # which table such a name is can only be told by its columns
    renamed = {name: _requalified(e, own, alias) for name, e in outputs.items()}
    select = query.copy()
    _name_items(select)
    target = next(i for i in _from_items(select) if i == derived)
    scan = table.copy()
    scan.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    target.replace(scan)
    for column in list(select.find_all(exp.Column)):
        if column.table.lower() == alias:
            expression = renamed.get(column.name.lower())
            if expression is None:
                return None
            column.replace(_wrapped(expression))
    where = inner.args.get("where")
    if where is not None:
        select.where(_requalified(where.this, own, alias), copy=False)
    return select


def _plain(inner: exp.Select, query: exp.Select, derived: exp.Subquery) -> bool:
    """A derived table that only projects and filters (its WHERE may test subqueries of its
    own), under a query whose items keep their names and that reads no other subquery."""
    if any(value for part, value in inner.args.items() if part not in _MERGEABLE):
        return False
    if any(item.find(exp.AggFunc, exp.Window, exp.Star) for item in inner.expressions):
        return False
    if any(i.is_star for i in query.expressions):
        return False
    own = {id(nested) for nested in (query, derived, *inner.find_all(exp.Query))}
    if any(id(nested) not in own for nested in query.find_all(exp.Query)):
        return False
    return all(isinstance(item, exp.Alias | exp.Column) for item in query.expressions)


def _reads_subqueries(select: exp.Select) -> bool:
    return any(nested is not select for nested in select.find_all(exp.Query))


def _requalified(expression: exp.Expr, own: str, alias: str) -> exp.Expr:
    """`expression` over a table now read under `alias`: its columns qualified by it."""
    copy = expression.copy()
    for column in copy.find_all(exp.Column):
        if not column.table or column.table.lower() == own:
            column.set("table", exp.to_identifier(alias))
    return copy


def _wrapped(expression: exp.Expr) -> exp.Expr:
    return expression.copy() if isinstance(expression, exp.Column) else exp.paren(expression.copy())


def _name_items(select: exp.Select) -> None:
    """Bare-column items aliased by their own names, which they keep once replaced."""
    select.set(
        "expressions",
        [
            item if isinstance(item, exp.Alias) else exp.alias_(item, item.name)
            for item in select.expressions
        ],
    )


def _merged_whole(query: exp.Select) -> exp.Expr:
    """A derived table that is the whole FROM, merged (see merged)."""
    from_ = query.args.get("from_") or query.args.get("from")
    derived = from_.this if from_ is not None else None
    if not isinstance(derived, exp.Subquery) or not isinstance(derived.this, exp.Select):
        return query
    inner = derived.this
    outputs = _outputs(derived)
    if not _plain(inner, query, derived) or outputs is None:
        return query
    select = query.copy()
    _name_items(select)
    select.set("from_", inner.args.get("from_") or inner.args.get("from"))
    for column in list(select.find_all(exp.Column)):
        expression = outputs.get(column.name.lower())
        if expression is None:
            return query
        column.replace(_wrapped(expression))
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
    """`query` with the unqualified columns of its join conditions, WHERE and HAVING, subqueries
    there included, named by the table in scope that has them (a subquery's own first, as Spark
    resolves them); `columns` are the sources' columns by table name. A name no table or
    several tables in scope have is left as written."""
    if not isinstance(query, exp.Select) or not columns:
        return query
    select = query.copy()
    conditions = [join.args.get("on") for join in select.args.get("joins") or []]
    conditions += [select.args.get("where"), select.args.get("having")]
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
