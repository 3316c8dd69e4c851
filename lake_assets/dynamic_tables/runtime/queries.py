"""The SQL a dynamic table's operators need: its query over other relations (sources as of a
version, their changes), restricted to keys, and an aggregate's rows before grouping."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import sqlglot
from pyspark.sql.types import DataType
from sqlglot import exp

from lake_assets.core import names
from lake_assets.dynamic_tables.analyses.folds import Aggregate
from lake_assets.dynamic_tables.analyses.shapes import nested_set_operation
from lake_assets.sql.binding import table_references
from lake_assets.sql.types import same


def references(select: exp.Expr) -> list[exp.Table]:
    """The table references of a query, in one fixed order (a CTE's name is not one)."""
    return table_references(select)


def rewrite(query: exp.Expr, relation: Callable[[int, str], str]) -> str:
    """Spark SQL with reference i (of table `name`) read from the view `relation(i, name)`."""
    copy = query.copy()
    for index, table in enumerate(references(copy)):
        name = table.name.lower()
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
        table.set("this", exp.to_identifier(relation(index, name)))
        table.set("db", None)
    return copy.sql(dialect="spark")


ROW_MARK = names.hidden("row")


def key_name(index: int) -> str:
    """Hidden column: a keyed query's key `index`, kept with each of its rows."""
    return names.hidden(f"key_{index}")


def key_column(position: int) -> str:
    return names.hidden(f"k_{position}")


def argument_column(slot: str) -> str:
    return names.hidden(f"a_{slot}")


def pre_aggregation(
    select: exp.Select,
    keys: Sequence[tuple[int, exp.Expr]],
    aggregates: Sequence[Aggregate],
) -> exp.Select:
    """The rows an aggregate reads: its keys and aggregate arguments, before grouping."""
    select = select.copy()
    columns = [exp.alias_(key.copy(), key_column(p)) for p, key in keys]
    columns += [
        exp.alias_(a.argument.copy(), argument_column(a.slot))
        for a in aggregates
        if a.argument is not None
    ]
    # Only COUNT(*) without GROUP BY reads no column: each row still counts.
    select.set("expressions", columns or [exp.alias_(exp.Literal.number(1), ROW_MARK)])
    select.set("group", None)
    return select


def key_rows(select: exp.Select, keys: Sequence[exp.Expr]) -> exp.Select:
    """The rows a keyed query reads (its FROM, joins and WHERE), as their keys."""
    rows = select.copy()
    rows.set("expressions", [exp.alias_(key.copy(), key_name(i)) for i, key in enumerate(keys)])
    for clause in ("group", "having", "qualify", "distinct", "windows"):
        rows.set(clause, None)
    return rows


def keys_restricted(
    query: exp.Expr,
    keys: Sequence[tuple[str, exp.Expr]],
    keys_view: str,
    key_types: Mapping[str, DataType],
) -> exp.Expr:
    """The query limited to the rows whose keys (column of `keys_view`, expression over the
    query's rows) `keys_view` lists, before any grouping or window; `key_types` say how each
    key compares (a MAP through its sorted entries)."""
    select = query.copy()
    assert isinstance(select, exp.Select), "a keyed query is one SELECT"
    alias = names.hidden("r")
    matches = [
        sqlglot.parse_one(
            same(
                exp.column(column, table=alias).sql(dialect="spark"),
                key.sql(dialect="spark"),
                key_types[column],
            ),
            dialect="spark",
        )
        for column, key in keys
    ]
    listed = exp.to_table(keys_view).as_(alias)
    inner = exp.select("1").from_(listed).where(exp.and_(*matches))
    # The keys to recompute are few: broadcast them rather than shuffle the sources.
    broadcast = exp.Anonymous(this="BROADCAST", expressions=[exp.to_identifier(alias)])
    inner.set("hint", exp.Hint(expressions=[broadcast]))
    return select.where(exp.Exists(this=inner), copy=False)


def read_where(query: exp.Expr, alias: str, predicate: str) -> exp.Expr:
    """`query` with the table under `alias` read only where `predicate` (over `alias`) holds:
    its scan is filtered, so the predicate cuts no row the query's joins would NULL-extend."""
    limited = query.copy()
    for table in references(limited):
        if table.alias_or_name.lower() == alias:
            condition = exp.condition(predicate, dialect="spark")
            scan = exp.select("*").from_(table.copy()).where(condition)
            table.replace(scan.subquery(table.alias_or_name))
    return limited


def rows_restricted(
    query: exp.Expr, columns: Sequence[str], keys_view: str, key_types: Mapping[str, DataType]
) -> exp.Expr:
    """A set operation limited to the rows `keys_view` lists (its `columns` are the query's):
    each branch by its own items."""
    if isinstance(query, exp.SetOperation) or nested_set_operation(query):
        limited = query.copy()
        for side in ("this", "expression"):
            if query.args.get(side):
                part = rows_restricted(query.args[side], columns, keys_view, key_types)
                limited.set(side, part)
        return limited
    assert isinstance(query, exp.Select), "a set operation's branches are SELECTs"
    keys = [(column, item.unalias()) for column, item in zip(columns, query.selects, strict=True)]
    return keys_restricted(query, keys, keys_view, key_types)
