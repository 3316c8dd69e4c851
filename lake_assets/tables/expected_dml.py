"""INSERT and UPDATE on a table with expectations: the rows the statement writes are read once
and judged (tables.enforcing) before its one commit, which carries their counts.

An INSERT writes the rows that pass (its rows read as the table's columns, cast to their
types). An UPDATE judges each updated row's new values; a row whose new values fail a DROP ROW
expectation keeps its old values, and its new values go to the quarantine instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from lake_assets.core.commits import writer_options
from lake_assets.core.errors import LakeError
from lake_assets.core.names import hidden
from lake_assets.core.results import Result
from lake_assets.core.spark_errors import retrying_lost_append_races
from lake_assets.core.writes import commit_write
from lake_assets.sql.grammar import OVERWRITE
from lake_assets.sql.statements import Dml, Query
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.enforcing import judged
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Violation, passes_over
from lake_assets.tables.expected_merge import judged_statement, write_merge

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def write_expected(session: Context, stmt: Dml, table: TableEntry) -> Result:
    """`stmt` (not a DELETE, which writes no row) on `table`, which has expectations."""
    table = recorded_schema(session.catalog, table)
    expression = stmt.expression
    if isinstance(expression, exp.Insert):
        return _insert(session, stmt, table, expression)
    if isinstance(expression, exp.Update):
        return _update(session, stmt, table, expression)
    if isinstance(expression, exp.Merge):
        return write_merge(session, stmt, table, expression)
    raise LakeError(
        f"{stmt.operation} into table {table.name}, which has expectations, is not supported",
        "write its rows with INSERT, UPDATE or MERGE",
    )


def _insert(session: Context, stmt: Dml, table: TableEntry, insert: exp.Insert) -> Result:
    listed = _listed(table, insert)
    rows = exp.Subquery(
        this=insert.expression.copy(),
        alias=exp.TableAlias(
            this=exp.to_identifier(hidden("rows")),
            columns=[exp.to_identifier(name, quoted=True) for name in listed],
        ),
    )
    given = {name.lower() for name in listed}
    query = exp.select(
        *(
            exp.cast(
                exp.column(c.name, quoted=True) if c.name.lower() in given else exp.null(),
                exp.DataType.build(c.type, dialect="spark"),
            ).as_(c.name, quoted=True)
            for c in table.columns
        )
    ).from_(rows)
    bound = session.bind(Query(query, stmt.sources))
    spark, mode = session.spark, "overwrite" if stmt.operation == OVERWRITE else "append"

    def write(location: str, record: dict[str, Any]) -> None:
        kept = judged(
            table, spark.sql(bound.sql), record["tag"], f"{stmt.operation} into {table.name}"
        )
        record.update(kept.record())
        retrying_lost_append_races(
            lambda: (
                kept.rows.write.format("delta")
                .mode(mode)
                .options(**writer_options(record))
                .save(location)
            )
        )

    return session.committing(
        table.name,
        lambda: commit_write(spark, session.catalog, table, stmt.operation, bound.consuming, write),
    )


def _listed(table: TableEntry, insert: exp.Insert) -> list[str]:
    """The columns an INSERT names (all of the table's, in order, when it names none)."""
    if not isinstance(insert.this, exp.Schema):
        return [c.name for c in table.columns]
    declared = {c.name.lower(): c.name for c in table.columns}
    listed = []
    for identifier in insert.this.expressions:
        if identifier.name.lower() not in declared:
            raise LakeError(
                f"INSERT names {identifier.name}, which is not a column of table {table.name}",
                f"choose among its columns: {', '.join(declared.values())}",
            )
        listed.append(declared[identifier.name.lower()])
    return listed


def _update(session: Context, stmt: Dml, table: TableEntry, update: exp.Update) -> Result:
    assigned = {eq.this.name.lower(): eq.expression for eq in update.expressions}
    where = update.args.get("where")
    new_values = exp.select(
        *(
            exp.cast(
                assigned[c.name.lower()].copy()
                if c.name.lower() in assigned
                else exp.column(c.name, quoted=True),
                exp.DataType.build(c.type, dialect="spark"),
            ).as_(c.name, quoted=True)
            for c in table.columns
        )
    ).from_(update.this.copy())
    if where is not None:
        new_values = new_values.where(where.this.copy())
    guarded = update.copy()
    for expectation in table.expectations:
        if expectation.on_violation == Violation.DROP_ROW:
            guarded = guarded.where(passes_over(expectation, assigned), copy=False)
    return judged_statement(session, stmt, table, new_values, guarded, f"UPDATE of {table.name}")
