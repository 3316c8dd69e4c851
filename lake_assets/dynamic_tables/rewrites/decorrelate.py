"""Subqueries in WHERE written as the semi and anti joins they mean, to refresh like joins."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.rewrites.scope import Columns
from lake_assets.sql.subqueries import conjuncts

# The parts a subquery may have to become a join: any other (GROUP BY, LIMIT, …) changes which
# rows match once its WHERE is the join's condition.
_PLAIN = frozenset({"expressions", "from_", "from", "where", "distinct"})


def decorrelate(expression: exp.Expr, **context: Columns) -> exp.Expr:
    """`expression` with the subqueries of its WHERE that are semi or anti joins written as
    joins, so that a dynamic table with them refreshes like one with joins: `EXISTS (SELECT …
    FROM d WHERE c)` keeps the rows that some row of d meets with c, a LEFT SEMI JOIN d ON c;
    `NOT EXISTS` keeps those no row meets, a LEFT ANTI JOIN (NULLs alike: a condition that is
    NULL meets nothing in both); `e IN (SELECT d.x FROM d WHERE c)` is the semi join ON
    e = d.x AND c (a NULL `e` or `d.x` matches nothing, and the row is dropped either way).
    Only conditions ANDed at the top of WHERE are rewritten, each a subquery of one table whose
    columns are all qualified (without a schema, an unqualified one could be either side's);
    anything else stays. NOT IN stays as written, for Spark's null-aware anti join (see
    keys.join_key)."""
    if not isinstance(expression, exp.Select) or expression.args.get("where") is None:
        return expression
    select = expression.copy()
    kept: list[exp.Expr] = []
    for condition in conjuncts(select.args["where"].this):
        join = _as_join(condition)
        if join is None:
            kept.append(condition)
        else:
            select.append("joins", join)
    if len(kept) == len(list(conjuncts(expression.args["where"].this))):
        return expression
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
