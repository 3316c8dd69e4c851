"""The rewrites that make a dynamic table's query the one it runs, in the order they apply: each
pass turns a query into one that means the same and that more of the rules apply to, and each is
tested on its own (tests/dynamic_tables/rewrites/fixtures)."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.dynamic_tables.analyses.shapes import derived_table
from lake_assets.dynamic_tables.rewrites.decorrelate import decorrelate
from lake_assets.dynamic_tables.rewrites.distinct_aliases import distinct_aliases
from lake_assets.dynamic_tables.rewrites.drop_sort import ORDER_IGNORED, drop_sort, only_sorts
from lake_assets.dynamic_tables.rewrites.inline_ctes import inline_ctes
from lake_assets.dynamic_tables.rewrites.merge_derived import merge_derived
from lake_assets.dynamic_tables.rewrites.niladic_calls import niladic_calls
from lake_assets.dynamic_tables.rewrites.qualify import qualify
from lake_assets.dynamic_tables.rewrites.scope import Columns, Pass

__all__ = ["PASSES", "Columns", "Pass", "notes", "runnable"]

PASSES: tuple[Pass, ...] = (
    niladic_calls,
    inline_ctes,
    drop_sort,
    merge_derived,
    qualify,
    distinct_aliases,
    decorrelate,
)


def runnable(query: exp.Expr, columns: Columns | None = None) -> exp.Expr:
    """The query a dynamic table runs: the names Spark calls written as calls, its CTEs
    inlined, without an ORDER BY that only sorts, a derived table that only projects merged
    into it, its conditions' columns qualified by their
    tables (`columns`: the sources' columns by table name), its subqueries' tables under aliases
    of their own, and the subqueries of its WHERE that are semi or anti joins written as joins;
    a derived table it reads is made runnable the same way."""
    for rewrite in PASSES:
        query = rewrite(query, columns=columns or {})
    derived = derived_table(query) if isinstance(query, exp.Select) else None
    if derived is not None and isinstance(derived.this, exp.Select):
        copy = query.copy()
        assert isinstance(copy, exp.Select), "a copy of a SELECT"
        inner = derived_table(copy)
        assert inner is not None, "the copy reads the same derived table"
        inner.set("this", runnable(derived.this, columns))
        return copy
    return query


def notes(query: exp.Expr) -> tuple[str, ...]:
    """What a dynamic table does with its definition that its text does not say."""
    return (ORDER_IGNORED,) if only_sorts(query) else ()
