"""The columns a SELECT's conditions equate between two of its tables: a row of the join holds
the same value in both, so either side's values bound the other's (see inner_join)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from lake_assets.sql.subqueries import conjuncts


def _conditions(select: exp.Select) -> Iterator[exp.Expr]:
    """The conditions ANDed in its WHERE and in each join's ON."""
    where = select.args.get("where")
    if where is not None:
        yield from conjuncts(where.this)
    for join in select.args.get("joins") or []:
        on = join.args.get("on")
        if on is not None:
            yield from conjuncts(on)


def equated(select: exp.Select, one: str, other: str) -> list[tuple[str, str]]:
    """(column of `one`, column of `other`) for each `one.a = other.b` (or `<=>`) the SELECT's
    conditions require of every row it reads, the tables named by their aliases."""
    pairs = []
    for condition in _conditions(select):
        if not isinstance(condition, exp.EQ | exp.NullSafeEQ):
            continue
        left, right = condition.this, condition.expression
        if not isinstance(left, exp.Column) or not isinstance(right, exp.Column):
            continue
        sides = {left.table.lower(): left.name, right.table.lower(): right.name}
        if len(sides) == 2 and one in sides and other in sides:
            pairs.append((sides[one], sides[other]))
    return pairs
