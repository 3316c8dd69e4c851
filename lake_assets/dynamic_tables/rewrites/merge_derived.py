"""A derived table that only projects and filters, merged into the SELECT that reads it."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns, from_items

# The parts a derived table may have to merge into the query that reads it.
_MERGEABLE = frozenset({"expressions", "from_", "from", "joins", "where"})


def merge_derived(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """`SELECT … FROM (SELECT … FROM … WHERE …) AS d …` as the one SELECT it means: the derived
    table's columns replaced by its expressions, its FROM, joins and WHERE taken in. Only when
    the derived table only projects and filters, and every outer select item keeps its name (an
    alias or a bare column): an unnamed expression's name would change. A derived table that is
    the whole FROM may join tables; one inner-joined with others reads one table. Derived
    tables inside are merged first."""
    if not isinstance(expression, exp.Select):
        return expression
    query = expression
    inside = [item for item in from_items(query) if isinstance(item, exp.Subquery)]
    if any(isinstance(item.this, exp.Select) for item in inside):
        query = query.copy()
        for item in from_items(query):
            if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Select):
                item.set("this", merge_derived(item.this))
    if query.args.get("joins"):
        return _merged_in_joins(query)
    return _merged_whole(query)


def _merged_in_joins(query: exp.Select) -> exp.Select:
    """Each derived table of one table that an inner join reads, merged (see merge_derived)."""
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
    # `SELECT * FROM t`: its columns are t's, by their names.
    outputs = {} if _selects_all(inner) else _outputs(derived)
    if not isinstance(table, exp.Table) or inner.args.get("joins") or outputs is None:
        return None
    alias = derived.alias_or_name.lower()
    own = table.alias_or_name.lower()
    unqualified = {c.name.lower() for c in query.find_all(exp.Column) if not c.table}
    if unqualified & set(outputs) or (unqualified and not outputs):
        return None  # which table such a name is can only be told by its columns
    renamed = {name: _requalified(e, own, alias) for name, e in outputs.items()}
    select = query.copy()
    _name_items(select)
    target = next(i for i in from_items(select) if i == derived)
    scan = table.copy()
    scan.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    target.replace(scan)
    for column in list(select.find_all(exp.Column)) if outputs else ():
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
    own), under a query whose items keep their names and that reads no other subquery (unless
    it selects `*`)."""
    if any(value for part, value in inner.args.items() if part not in _MERGEABLE):
        return False
    if not _selects_all(inner) and any(
        item.find(exp.AggFunc, exp.Window, exp.Star) for item in inner.expressions
    ):
        return False
    if any(i.is_star for i in query.expressions):
        return False
    # Its columns keep their names and its alias, so other subqueries read them as before.
    own = {id(nested) for nested in (query, derived, *inner.find_all(exp.Query))}
    if not _selects_all(inner) and any(
        id(nested) not in own for nested in query.find_all(exp.Query)
    ):
        return False
    return all(isinstance(item, exp.Alias | exp.Column) for item in query.expressions)


def _selects_all(inner: exp.Select) -> bool:
    """`SELECT * FROM …`: every column of what it reads, and nothing else."""
    return len(inner.expressions) == 1 and isinstance(inner.expressions[0], exp.Star)


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
    """A derived table that is the whole FROM, merged (see merge_derived)."""
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
