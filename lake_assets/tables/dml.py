"""INSERT, UPDATE, DELETE and MERGE: one Delta commit each, found again by its commit tag."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import Marker, committing, find, new_record
from lake_assets.core.delta import latest_version, row_changes, row_count
from lake_assets.core.results import Result
from lake_assets.sql.grammar import OVERWRITE
from lake_assets.sql.statements import Dml
from lake_assets.tables.entry import TableEntry

if TYPE_CHECKING:
    from lake_assets.session import Bound, LakeSession


def execute_dml(session: LakeSession, stmt: Dml) -> Result:
    bound = session.bind(stmt)  # before Spark: unknown names fail without a JVM
    return session.committing(
        stmt.target, lambda: run_dml(session.spark, session.catalog, stmt, bound)
    )


def run_dml(spark: SparkSession, catalog: Catalog, stmt: Dml, bound: Bound) -> Result:
    """Run a bound DML statement (consuming the streams it reads) and record the table's new
    version and row count."""
    target = catalog.get(TableEntry, stmt.target)
    before = latest_version(spark, target.location)
    record = new_record(Marker.STATEMENT, operation=stmt.operation)
    with bound.consuming(target.location, before, record), committing(spark, record):
        spark.sql(bound.sql).collect()
    commit = find(spark, target.location, record, after=before)
    if commit is None:
        return Result.status(f"{stmt.operation}: no change to {stmt.target}")
    version = commit.version
    changes = row_changes(commit.operation, commit.operation_metrics)
    if stmt.operation == OVERWRITE:
        # Its metrics count the rows written, not the rows it replaced: count the table.
        rows = record_commit_state(spark, catalog, target, version, None)
        written = changes[0] if changes else "?"
        return Result.status(
            f"{OVERWRITE}: {written} rows written; {stmt.target} is at version {version} "
            f"with {rows} rows"
        )
    rows = record_commit_state(spark, catalog, target, version, changes)
    inserted, updated, deleted = changes or ("?", "?", "?")
    return Result.status(
        f"{stmt.operation}: {inserted} inserted, {updated} updated, {deleted} deleted; "
        f"{stmt.target} is at version {version} with {rows} rows"
    )


def record_commit_state(
    spark: SparkSession,
    catalog: Catalog,
    before: TableEntry,
    version: int,
    changes: tuple[int, int, int] | None,
) -> int:
    """Record a commit's version and row count; return the count."""
    if changes is not None and before.version == version - 1 and before.row_count is not None:
        # The commit directly follows the state we know: its metrics give the count exactly.
        rows = before.row_count + changes[0] - changes[2]
    else:
        rows = row_count(spark, before.location, version)
    catalog.record_table_state(before, version, rows)
    return rows
