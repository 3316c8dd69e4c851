"""Top-N queries (`… ORDER BY o LIMIT n [OFFSET m]`): which rows make the top depends on every
other row, so the rows ranked (the query without its ORDER BY, LIMIT and OFFSET) are kept in a
hidden table maintained like any dynamic table, and the top rows are read from it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from lake_assets.core import names


@dataclass(frozen=True)
class Ordering:
    """One ORDER BY term, as the ranked rows' column at `position` (a hidden one past the
    query's own columns when the term is not one of them)."""

    position: int
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class TopN:
    """`rows` is the query ranked, its own columns followed by `hidden` order columns."""

    rows: exp.Expr
    order: tuple[Ordering, ...]
    limit: exp.Expr
    offset: exp.Expr | None
    hidden: tuple[str, ...]

    def top(self, relation: str, columns: list[str]) -> str:
        """The top rows of the ranked rows held in `relation` (named `columns`, then the
        hidden ones): ties broken by every column, so each refresh picks the same rows."""
        quoted = [exp.column(name, quoted=True) for name in [*columns, *self.hidden]]
        terms = [
            exp.Ordered(
                this=quoted[o.position].copy(), desc=o.descending, nulls_first=o.nulls_first
            )
            for o in self.order
        ]
        terms += [exp.Ordered(this=c.copy(), nulls_first=True) for c in quoted[: len(columns)]]
        select = exp.select(*quoted[: len(columns)]).from_(relation).order_by(*terms)
        select = select.limit(self.limit.copy())
        if self.offset is not None:
            select = select.offset(self.offset.copy())
        return select.sql(dialect="spark")


def top_n(query: exp.Expr) -> TopN | str | None:
    """The top-N of a query limited by LIMIT after an ORDER BY; why it cannot be kept, or None
    when it has no LIMIT."""
    limit = query.args.get("limit")
    if limit is None:
        return None
    order = query.args.get("order")
    if order is None:
        return "LIMIT without ORDER BY keeps any rows: refreshed in full"
    count = limit.expression if isinstance(limit, exp.Limit) else limit
    if not (isinstance(count, exp.Literal) and count.is_int):
        return "LIMIT of an expression is refreshed in full"
    offset = query.args.get("offset")
    rows = query.copy()
    for clause in ("order", "limit", "offset"):
        rows.set(clause, None)
    items = _items(rows)
    if items is None:
        return "ORDER BY … LIMIT over this query is refreshed in full"
    hidden: list[str] = []
    terms = []
    for term in order.expressions:
        position = _position(term.this, items)
        if position is None:
            if not isinstance(rows, exp.Select):
                return "ORDER BY of an expression over a UNION is refreshed in full"
            name = names.hidden(f"order_{len(hidden)}")
            rows.select(exp.alias_(term.this.copy(), name), copy=False)
            position = len(items) + len(hidden)
            hidden.append(name)
        descending = bool(term.args.get("desc"))
        # Spark puts NULLs first ascending and last descending unless told.
        nulls_first = term.args.get("nulls_first")
        nulls_first = (not descending) if nulls_first is None else bool(nulls_first)
        terms.append(Ordering(position, descending, nulls_first))
    offset_count = offset.expression if isinstance(offset, exp.Offset) else offset
    return TopN(rows, tuple(terms), count, offset_count, tuple(hidden))


def _items(query: exp.Expr) -> list[exp.Expr] | None:
    """The select items that name the query's columns (a set operation's first branch's)."""
    while isinstance(query, exp.SetOperation):
        query = query.this
    if not isinstance(query, exp.Select) or any(item.is_star for item in query.expressions):
        return None
    return list(query.expressions)


def _position(term: exp.Expr, items: list[exp.Expr]) -> int | None:
    """The query's column an ORDER BY term names: by ordinal, by its name, or by repeating its
    expression."""
    if isinstance(term, exp.Literal) and term.is_int:
        index = int(term.name) - 1
        return index if 0 <= index < len(items) else None
    if isinstance(term, exp.Column) and not term.table:
        for index, item in enumerate(items):
            if item.alias_or_name.lower() == term.name.lower():
                return index
    text = term.sql(dialect="spark")
    for index, item in enumerate(items):
        if item.unalias().sql(dialect="spark") == text:
            return index
    return None
