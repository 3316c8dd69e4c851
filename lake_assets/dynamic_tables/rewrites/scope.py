"""What the rewrite passes share: the context they are given and the FROM items of a SELECT."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from sqlglot import exp

# The sources' columns by table name: the context a pass is given, as `columns`.
Columns = Mapping[str, Collection[str]]


class Pass(Protocol):
    """A rewrite of a query into one that means the same and that more rules apply to."""

    def __call__(self, expression: exp.Expr, **context: Columns) -> exp.Expr: ...


def from_items(select: exp.Select) -> list[exp.Expr]:
    """What a SELECT reads: its FROM item, then each joined item."""
    from_ = select.args.get("from_") or select.args.get("from")
    items: list[exp.Expr] = [from_.this] if from_ is not None else []
    return items + [join.this for join in select.args.get("joins") or []]


def tables(select: exp.Select) -> list[exp.Table]:
    """The tables a SELECT reads directly (not through a derived table)."""
    return [item for item in from_items(select) if isinstance(item, exp.Table)]
