"""MERGE into a table with expectations: the rows its UPDATE and INSERT clauses write are read
once (the target and the source joined, each row taking the first clause that acts on it, as
MERGE does) and judged before its one commit. A row whose new values fail a DROP ROW expectation
takes no action at all — the target row keeps its old values, a source row is not inserted, and
no later clause acts on it instead — and its new values go to the quarantine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from lake_assets.core.commits import committing
from lake_assets.core.names import hidden
from lake_assets.core.results import Result
from lake_assets.core.spark_errors import retrying_lost_append_races
from lake_assets.core.writes import commit_write
from lake_assets.sql.merge import standard_merge
from lake_assets.sql.statements import Dml, Query
from lake_assets.tables.enforcing import bound_alike, judged
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Violation, passes_over

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

_IN_TARGET, _IN_SOURCE, _CLAUSE = hidden("in_target"), hidden("in_source"), hidden("clause")


@dataclass(frozen=True)
class _Clause:
    """A WHEN clause: when it acts (its kind and condition), and what each column of the row it
    writes holds (None: it writes no row, a DELETE)."""

    when: exp.When
    acts: exp.Expr
    values: dict[str, exp.Expr] | None


def write_merge(session: Context, stmt: Dml, table: TableEntry, merge: exp.Merge) -> Result:
    # The standard meaning first (sql.merge): the source rows no clause can act on go before the
    # clauses are guarded, as the guards read the target.
    merge = standard_merge(merge, [column.name for column in table.columns])
    target = merge.this.alias_or_name
    source = merge.args["using"].alias_or_name
    clauses = [_clause(table, when, target, source) for when in merge.args["whens"].expressions]
    written = _written_rows(table, merge, clauses, target, source)
    guarded = _guarded(table, merge, clauses)
    return judged_statement(session, stmt, table, written, guarded, f"MERGE into {table.name}")


def judged_statement(
    session: Context, stmt: Dml, table: TableEntry, rows: exp.Expr, guarded: exp.Expr, what: str
) -> Result:
    """Run `guarded` (an UPDATE or MERGE guarded by the DROP ROW expectations) in one commit,
    having judged `rows`, the rows it writes, bound to read the same stream ranges."""
    judging, bound = bound_alike(
        session,
        Query(rows, stmt.sources),
        Dml(stmt.operation, stmt.target, guarded, stmt.sources),
    )
    spark = session.spark

    def write(location: str, record: dict[str, Any]) -> None:
        kept = judged(table, spark.sql(judging.sql), record["tag"], what)
        record.update(kept.record())
        with committing(spark, record):
            retrying_lost_append_races(lambda: spark.sql(bound.sql).collect())

    return session.committing(
        table.name,
        lambda: commit_write(spark, session.catalog, table, stmt.operation, bound.consuming, write),
    )


def _clause(table: TableEntry, when: exp.When, target: str, source: str) -> _Clause:
    in_target = exp.column(_IN_TARGET, table=target).is_(exp.null()).not_()
    in_source = exp.column(_IN_SOURCE, table=source).is_(exp.null()).not_()
    if when.args.get("source"):  # NOT MATCHED BY SOURCE
        kind: exp.Expr = exp.and_(in_target, exp.not_(in_source))
    elif when.args.get("matched"):
        kind = exp.and_(in_target, in_source)
    else:
        kind = exp.and_(in_source, exp.not_(in_target))
    condition = when.args.get("condition")
    acts = kind if condition is None else exp.and_(kind, condition.copy())
    return _Clause(when, acts, _values(table, when.args["then"], target, source))


def _values(
    table: TableEntry, then: exp.Expr, target: str, source: str
) -> dict[str, exp.Expr] | None:
    """Each column's new value in the row a clause writes, by lower-cased name."""
    names = [c.name for c in table.columns]
    from_source: dict[str, exp.Expr] = {
        n.lower(): exp.column(n, table=source, quoted=True) for n in names
    }
    if isinstance(then, exp.Update):
        if any(isinstance(e, exp.Star) for e in then.expressions):
            return from_source
        values: dict[str, exp.Expr] = {
            n.lower(): exp.column(n, table=target, quoted=True) for n in names
        }
        values.update({eq.this.name.lower(): eq.expression for eq in then.expressions})
        return values
    if isinstance(then, exp.Insert):
        if isinstance(then.this, exp.Star):
            return from_source
        listed = [c.name for c in then.this.expressions] if then.this is not None else names
        given = dict(zip((n.lower() for n in listed), then.expression.expressions, strict=True))
        return {n.lower(): given.get(n.lower(), exp.null()) for n in names}
    return None


def _marked(relation: exp.Expr, alias: str, marker: str) -> exp.Expr:
    """`relation` as `alias`, with a column that is TRUE in each of its rows (NULL where an
    outer join found none)."""
    inner = relation.copy()
    if not inner.alias:
        inner = exp.alias_(inner, alias, table=True)
    return exp.select("*", exp.true().as_(marker)).from_(inner).subquery(alias)


def _written_rows(
    table: TableEntry, merge: exp.Merge, clauses: list[_Clause], target: str, source: str
) -> exp.Expr:
    """The rows the MERGE writes, as the table's columns: each joined row's values by the first
    clause that acts on it, kept when that clause writes a row."""
    taken = exp.Case()
    for index, clause in enumerate(clauses):
        taken = taken.when(clause.acts.copy(), exp.Literal.number(index))
    columns = []
    for column in table.columns:
        value = exp.Case()
        for clause in clauses:
            written = clause.values[column.name.lower()] if clause.values else exp.null()
            value = value.when(clause.acts.copy(), written.copy())
        typed = exp.DataType.build(column.type, dialect="spark")
        columns.append(exp.cast(value, typed).as_(column.name, quoted=True))
    joined = (
        exp.select(*columns, taken.as_(_CLAUSE))
        .from_(_marked(merge.this, target, _IN_TARGET))
        .join(
            _marked(merge.args["using"], source, _IN_SOURCE),
            on=merge.args["on"].copy(),
            join_type="FULL OUTER",
        )
    )
    chosen = [exp.Literal.number(i) for i, c in enumerate(clauses) if c.values is not None]
    return (
        exp.select(*(exp.column(c.name, quoted=True) for c in table.columns))
        .from_(joined.subquery(hidden("merged")))
        .where(exp.column(_CLAUSE).isin(*chosen))
    )


def _guarded(table: TableEntry, merge: exp.Merge, clauses: list[_Clause]) -> exp.Merge:
    """The MERGE with each writing clause taken only when its row passes the DROP ROW
    expectations, and no later clause taken by a row one of them dropped."""
    drops = [e for e in table.expectations if e.on_violation == Violation.DROP_ROW]
    guarded = merge.copy()
    # By kind of clause (MATCHED, NOT MATCHED, NOT MATCHED BY SOURCE): the rows an earlier
    # clause of that kind dropped, which no later one may take.
    blocked: dict[tuple[bool, bool], list[exp.Expr]] = {}
    for clause, when in zip(clauses, guarded.args["whens"].expressions, strict=True):
        earlier = blocked.setdefault(
            (bool(when.args.get("matched")), bool(when.args.get("source"))), []
        )
        own = when.args.get("condition")
        conditions = [c.copy() for c in (own, *(exp.not_(b) for b in earlier)) if c is not None]
        if clause.values is not None and drops:
            passes = exp.and_(*(passes_over(e, clause.values) for e in drops))
            taken = exp.true() if own is None else exp.func("COALESCE", own.copy(), exp.false())
            earlier.append(exp.paren(exp.and_(taken, exp.not_(passes.copy()))))
            conditions.append(passes)
        if conditions:
            when.set("condition", exp.and_(*conditions))
    return guarded
