"""INSERT, UPDATE, DELETE and MERGE: one Delta commit each, found again by its commit tag."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import Marker, committing, find, new_record
from lake_assets.core.delta import latest_version, row_changes, row_count
from lake_assets.core.results import Result
from lake_assets.sql.grammar import OVERWRITE
from lake_assets.sql.statements import Dml
from lake_assets.tables.entry import TableEntry

if TYPE_CHECKING:
    from lake_assets.core.kind import Bound, Context

# Delta's error when another writer only appended files since this statement read the table.
_LOST_APPEND_RACE = "DELTA_CONCURRENT_APPEND"
# Tries after the first, each after twice the wait of the one before (0.2 s … 3.2 s).
_RETRIES, _FIRST_WAIT_SECONDS = 5, 0.2


def execute_dml(session: Context, stmt: Dml) -> Result:
    bound = session.bind(stmt)  # before Spark: unknown names fail without a JVM
    return session.committing(
        stmt.target, lambda: run_dml(session.spark, session.catalog, stmt, bound)
    )


# A consuming context around the write (Bound.consuming, offsets.consuming), and the write
# itself: both take the target's location; they get the version it was read at and the record.
Consuming = Callable[[str, int, dict[str, Any]], AbstractContextManager[None]]
Write = Callable[[str, dict[str, Any]], None]


def run_dml(spark: SparkSession, catalog: Catalog, stmt: Dml, bound: Bound) -> Result:
    """Run a bound DML statement, consuming the streams it reads."""

    def write(location: str, record: dict[str, Any]) -> None:
        with committing(spark, record):
            retrying_lost_append_races(lambda: spark.sql(bound.sql).collect())

    return commit_write(spark, catalog, stmt.target, stmt.operation, bound.consuming, write)


def retrying_lost_append_races(run: Callable[[], object]) -> None:
    """Run a statement again (reading the table afresh) when it lost its commit only to another
    writer's append, so that both succeed; a true conflict (two writers rewriting the same
    files) still fails at once, with the "run it again" error."""
    for attempt in range(_RETRIES):
        try:
            run()
            return
        except Exception as error:
            if not lost_append_race(error):
                raise
        time.sleep(_FIRST_WAIT_SECONDS * 2**attempt)
    run()


def lost_append_race(error: Exception) -> bool:
    """Whether a Spark failure is Delta's DELTA_CONCURRENT_APPEND (of any subclass)."""
    condition = error.getCondition() if isinstance(error, PySparkException) else None
    return (condition or "").startswith(_LOST_APPEND_RACE) or f"[{_LOST_APPEND_RACE}" in str(error)


def commit_write(
    spark: SparkSession,
    catalog: Catalog,
    name: str,
    operation: str,
    consuming: Consuming,
    write: Write,
) -> Result:
    """One tagged commit to table `name` (SQL DML or a DataFrame save), found again by its tag,
    and the table's new version and row count recorded."""
    target = catalog.get(TableEntry, name)
    before = latest_version(spark, target.location)
    record = new_record(Marker.STATEMENT, operation=operation)
    with consuming(target.location, before, record):
        write(target.location, record)
    commit = find(spark, target.location, record, after=before)
    if commit is None:
        return Result.status(f"{operation}: no change to {name}")
    version = commit.version
    changes = row_changes(commit.operation or "", commit.operation_metrics)
    if operation == OVERWRITE:
        # Its metrics count the rows written, not the rows it replaced: count the table.
        rows = record_commit_state(spark, catalog, target, version, None)
        written = changes[0] if changes else "?"
        return Result.status(
            f"{OVERWRITE}: {written} rows written; {name} is at version {version} with {rows} rows"
        )
    rows = record_commit_state(spark, catalog, target, version, changes)
    inserted, updated, deleted = changes or ("?", "?", "?")
    return Result.status(
        f"{operation}: {inserted} inserted, {updated} updated, {deleted} deleted; "
        f"{name} is at version {version} with {rows} rows"
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
