"""UPDATE and DELETE whose WHERE reads subqueries, rewritten to the MERGE that means the same:
Delta refuses subqueries in UPDATE and DELETE conditions (DELTA_UNSUPPORTED_SUBQUERY) but reads
any query as a MERGE's source.

`… WHERE rest AND e IN (SELECT c …)` keeps the target rows whose `e` equals a row of the
subquery; `EXISTS (SELECT … WHERE s.k = t.k AND local)` those whose `t.k` equals the `s.k` of a
row passing `local`. Both are a semi-join: MERGE INTO t USING (SELECT DISTINCT keys …) ON t's
side = keys WHEN MATCHED AND rest THEN …, where DISTINCT keys let each target row match at most
one source row. NOT EXISTS is the anti-join, WHEN NOT MATCHED BY SOURCE. Shapes without an exact
MERGE (NOT IN, subqueries under OR or in SET, correlations other than equalities) are refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from sqlglot import exp

from lake_assets.core.errors import LakeError
from lake_assets.core.names import hidden

_SOURCE = hidden("matches")
_QUERY = hidden("query")
# The parts a correlated subquery may have: any other (GROUP BY, LIMIT, …) changes which rows
# match once the correlation becomes a join condition.
_PLAIN = frozenset({"expressions", "from_", "joins", "where", "distinct"})
_AS_MERGE = (
    "write the statement as MERGE INTO … USING (SELECT …) s ON … "
    "WHEN MATCHED THEN UPDATE SET … | DELETE"
)


@dataclass(frozen=True)
class _Target:
    """The statement's target: how errors name the statement, and the name its columns take."""

    verb: str
    alias: str

    def refused(self, what: str, fix: str) -> LakeError:
        return LakeError(f"{self.verb}: {what}", fix)


@dataclass(frozen=True)
class _SemiJoin:
    """One subquery condition: the target rows whose `targets` equal the keys of some row of
    `source` (keys named by `_key(index, position)`), or of none when `negated`."""

    source: exp.Select
    targets: tuple[exp.Expr, ...]
    negated: bool = False


def subquery_merge(statement: exp.Expr) -> exp.Expr:
    """`statement` itself, or the MERGE that means the same when it is an UPDATE or DELETE
    whose WHERE reads subqueries."""
    if not isinstance(statement, exp.Update | exp.Delete):
        return statement
    target = _target(statement)
    if any(assignment.find(exp.Query) for assignment in statement.expressions):
        raise target.refused(
            "subqueries in SET are not supported",
            "compute the values in a MERGE: MERGE INTO … USING (SELECT …) s ON … "
            "WHEN MATCHED THEN UPDATE SET col = s.col",
        )
    where = statement.args.get("where")
    if where is None or where.find(exp.Query) is None:
        return statement
    joins: list[_SemiJoin] = []
    rest: list[exp.Expr] = []
    for condition in conjuncts(where.this):
        if condition.find(exp.Query) is None:
            rest.append(condition.copy())
        else:
            joins.append(_semi_join(condition, len(joins), target))
    return _merge(statement, joins, rest, target)


def _target(statement: exp.Update | exp.Delete) -> _Target:
    table = statement.this
    name = exp.table_name(table)
    verb = f"UPDATE {name}" if isinstance(statement, exp.Update) else f"DELETE FROM {name}"
    return _Target(verb, table.alias_or_name.lower())


def conjuncts(condition: exp.Expr) -> Iterator[exp.Expr]:
    """The conditions ANDed at the top of `condition`, parentheses removed."""
    inner = condition.unnest()
    if isinstance(inner, exp.And):
        yield from conjuncts(inner.this)
        yield from conjuncts(inner.expression)
    else:
        yield inner


def _key(index: int, position: int) -> str:
    return hidden(f"key_{index}_{position}")


def _semi_join(condition: exp.Expr, index: int, target: _Target) -> _SemiJoin:
    negated = isinstance(condition, exp.Not)
    inner = condition.this.unnest() if negated else condition
    shape = _SHAPES.get((type(inner), negated))
    if shape is None:
        raise _unsupported(target)
    return shape(inner, index, target)


def _unsupported(target: _Target) -> LakeError:
    return target.refused(
        "a subquery in WHERE is supported only as `… IN (SELECT …)`, EXISTS (…) or "
        "NOT EXISTS (…), ANDed with the other conditions",
        f"rewrite the condition that way, or {_AS_MERGE}",
    )


def _in(node: exp.Expr, index: int, target: _Target) -> _SemiJoin:
    query = node.args.get("query")
    if query is None or node.this.find(exp.Query):
        raise _unsupported(target)
    left = node.this
    targets = left.expressions if isinstance(left, exp.Tuple) else [left]
    return _join(query.unnest(), targets, index, target, negated=False)


def _exists(node: exp.Expr, index: int, target: _Target) -> _SemiJoin:
    return _join(node.this, [], index, target, negated=False)


def _not_exists(node: exp.Expr, index: int, target: _Target) -> _SemiJoin:
    return _join(node.this, [], index, target, negated=True)


def _not_in(node: exp.Expr, index: int, target: _Target) -> _SemiJoin:
    raise target.refused(
        "NOT IN (SELECT …) is not supported (it is never true once the subquery returns a NULL)",
        "write NOT EXISTS (SELECT … WHERE s.col = t.col), which passes over NULLs, "
        "or a MERGE … WHEN NOT MATCHED BY SOURCE",
    )


_SHAPES: dict[tuple[type, bool], Callable[[exp.Expr, int, _Target], _SemiJoin]] = {
    (exp.In, False): _in,
    (exp.Exists, False): _exists,
    (exp.Exists, True): _not_exists,
    (exp.In, True): _not_in,
}


def _refers(node: exp.Expr, alias: str) -> bool:
    """Whether `node` names a column of the target (by its name or alias)."""
    return any(column.table.lower() == alias for column in node.find_all(exp.Column))


def _shadows(query: exp.Expr, alias: str) -> bool:
    """Whether the subquery reads a relation of the target's name, which hides the target."""
    return any(
        source.alias_or_name.lower() == alias for source in query.find_all(exp.Table, exp.Subquery)
    )


def _join(
    query: exp.Expr,
    targets: Sequence[exp.Expr],
    index: int,
    target: _Target,
    negated: bool,
) -> _SemiJoin:
    if _shadows(query, target.alias) or not _refers(query, target.alias):
        return _uncorrelated(query, targets, index, negated)
    return _correlated(query, targets, index, target, negated)


def _uncorrelated(
    query: exp.Expr, targets: Sequence[exp.Expr], index: int, negated: bool
) -> _SemiJoin:
    """The subquery as it is, under key names: its distinct rows, or one row when it has any."""
    keys = [exp.to_identifier(_key(index, position)) for position in range(len(targets))]
    derived = exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier(_QUERY)))
    if keys:
        derived.args["alias"].set("columns", keys)
        source = exp.select("*").from_(derived).distinct()
    else:
        source = exp.select(exp.alias_(exp.true(), _key(index, 0))).from_(derived).distinct()
    return _SemiJoin(source, tuple(targets), negated)


def _correlated(
    query: exp.Expr,
    targets: Sequence[exp.Expr],
    index: int,
    target: _Target,
    negated: bool,
) -> _SemiJoin:
    """A subquery that refers to the target: its correlations become the join's keys."""
    _check_plain(query, len(targets), target)
    compared = query.expressions[: len(targets)]  # EXISTS compares none
    pairs = [(outer, inner.unalias()) for outer, inner in zip(targets, compared, strict=True)]
    local = []
    where = query.args.get("where")
    for condition in conjuncts(where.this) if where else ():
        if _refers(condition, target.alias):
            pairs.append(_correlation(condition, target))
        else:
            local.append(condition.copy())
    keys = [exp.alias_(inner.copy(), _key(index, n)) for n, (_, inner) in enumerate(pairs)]
    source = exp.select(*keys).from_(query.args["from_"].this.copy()).distinct()
    for join in query.args.get("joins") or ():
        source.append("joins", join.copy())
    if local:
        source = source.where(exp.and_(*local))
    return _SemiJoin(source, tuple(outer for outer, _ in pairs), negated)


def _check_plain(query: exp.Expr, compared: int, target: _Target) -> None:
    if not _plain(query, compared, target.alias):
        raise target.refused(
            f"a subquery that refers to {target.alias} must be a plain SELECT … FROM … WHERE "
            f"naming {target.alias} only in its WHERE (no GROUP BY, aggregates or LIMIT)",
            f"select what it matches in a subquery that does not refer to {target.alias}, "
            f"or {_AS_MERGE}",
        )


def _plain(query: exp.Expr, compared: int, alias: str) -> bool:
    """Whether a correlated subquery is SELECT … FROM … [JOIN …] WHERE …, naming the target only
    in its WHERE, and for IN selecting one column per value compared."""
    if not isinstance(query, exp.Select):
        return False
    parts = {key for key, value in query.args.items() if value}
    if not parts <= _PLAIN or "from_" not in parts:
        return False
    selected = query.expressions
    compared_to = selected if compared else []
    outside_where = [query.args["from_"], *(query.args.get("joins") or ()), *compared_to]
    return (
        not any(column.find(exp.AggFunc, exp.Window) for column in selected)
        and not any(column.find(exp.Star) for column in compared_to)
        and not any(_refers(part, alias) for part in outside_where)
        and len(compared_to) == compared
    )


def _correlation(condition: exp.Expr, target: _Target) -> tuple[exp.Expr, exp.Expr]:
    """A correlated condition as (the target's side, the subquery's side) of an equality."""
    if isinstance(condition, exp.EQ) and not condition.find(exp.Query):
        sides = (condition.this, condition.expression)
        for outer, inner in (sides, sides[::-1]):
            if _only_target(outer, target.alias) and not _refers(inner, target.alias):
                return outer, inner
    raise target.refused(
        f"a subquery may refer to {target.alias} only in equalities such as "
        f"s.col = {target.alias}.col, ANDed in its WHERE",
        f"move the other conditions on {target.alias} out of the subquery, or {_AS_MERGE}",
    )


def _only_target(node: exp.Expr, alias: str) -> bool:
    columns = list(node.find_all(exp.Column))
    return bool(columns) and all(column.table.lower() == alias for column in columns)


def _merge(
    statement: exp.Update | exp.Delete,
    joins: list[_SemiJoin],
    rest: list[exp.Expr],
    target: _Target,
) -> exp.Merge:
    negated = any(join.negated for join in joins)
    if negated and len(joins) > 1:
        raise target.refused("NOT EXISTS (…) must be the only subquery in WHERE", _AS_MERGE)
    on = [
        exp.EQ(this=outer.copy(), expression=exp.column(_key(index, position), table=_SOURCE))
        for index, join in enumerate(joins)
        for position, outer in enumerate(join.targets)
    ]
    when = exp.When(
        matched=not negated,
        source=negated,
        condition=exp.and_(*rest) if rest else None,
        then=_action(statement),
    )
    return exp.Merge(
        this=statement.this.copy(),
        using=_source(joins).subquery(_SOURCE),
        on=exp.and_(*on) if on else exp.true(),
        whens=exp.Whens(expressions=[when]),
    )


def _source(joins: list[_SemiJoin]) -> exp.Select:
    """One source for all the semi-joins: their distinct keys, crossed."""
    if len(joins) == 1:
        return joins[0].source
    parts = [join.source.subquery(hidden(f"part_{index}")) for index, join in enumerate(joins)]
    source = exp.select("*").from_(parts[0])
    for part in parts[1:]:
        source = source.join(part, join_type="cross")
    return source


def _action(statement: exp.Update | exp.Delete) -> exp.Expr:
    if isinstance(statement, exp.Update):
        return exp.Update(expressions=[assignment.copy() for assignment in statement.expressions])
    return exp.var("DELETE")
