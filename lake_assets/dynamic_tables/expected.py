"""A dynamic table's expectations. One that drops rows filters its query: the table holds the rows
that pass, and every refresh keeps it so by the planner's own rules (incremental equals full, and
an aggregate's group rows keep their state); each refresh also counts, over its query's whole
result, the rows kept and left out, and keeps those in the quarantine. WARN and FAIL ones judge
the rows each refresh adds (see runtime.writing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyspark.sql import DataFrame
from sqlglot import exp

from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.tables.enforcing import judged
from lake_assets.tables.expectations import Expectation, Violation, passes_over

# The alias of the query that a dynamic table with DROP ROW expectations filters.
KEPT = hidden("kept")


def kept(query: exp.Expr, names: Sequence[str], expectations: Sequence[Expectation]) -> exp.Expr:
    """`query`, its columns named `names`, as the table holds it: only the rows that pass every
    DROP ROW expectation."""
    drops = [e for e in expectations if e.on_violation == Violation.DROP_ROW]
    if not drops:
        return query
    columns = {name.lower(): exp.column(name, KEPT, quoted=True) for name in names}
    derived = exp.Subquery(
        this=query.copy(),
        alias=exp.TableAlias(
            this=exp.to_identifier(KEPT),
            columns=[exp.to_identifier(name, quoted=True) for name in names],
        ),
    )
    items = [exp.alias_(columns[name.lower()].copy(), name, quoted=True) for name in names]
    return (
        exp.select(*items)
        .from_(derived)
        .where(exp.and_(*(passes_over(expectation, columns) for expectation in drops)))
    )


def drops_rows(expectations: Sequence[Expectation]) -> bool:
    return any(e.on_violation == Violation.DROP_ROW for e in expectations)


def judge_refresh(
    entry: DynamicTableEntry, added: DataFrame, result: DataFrame | None, tag: str
) -> dict[str, list[int]]:
    """Each expectation's [passed, failed] for one refresh: WARN and FAIL ones over the rows its
    commit adds (a FAIL refuses it), DROP ROW ones over its query's `result` as it stands (the
    rows kept and left out, these put in the quarantine in place of the last refresh's)."""
    what = f"the refresh of dynamic table {entry.name}"
    judging = tuple(e for e in entry.expectations if e.on_violation != Violation.DROP_ROW)
    counts = judged(replace(entry, expectations=judging), added, tag, what).counts
    if result is not None:
        dropping = tuple(e for e in entry.expectations if e.on_violation == Violation.DROP_ROW)
        counts |= judged(replace(entry, expectations=dropping), result, tag, what).counts
    return counts
