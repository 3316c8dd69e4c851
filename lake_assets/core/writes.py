"""The step every write to a table ends with, whichever kind writes it (DML, a DataFrame save,
a pipe's load, an export): its tagged commit found again, and the table's new version and row
count recorded in the catalog."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from pyspark.sql import SparkSession

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import STATEMENT_MARKER, find, new_record
from lake_assets.core.delta import latest_version, row_changes, row_count
from lake_assets.core.entries import StoredRelation
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.results import Result
from lake_assets.sql.grammar import OVERWRITE

# A consuming context around the write (Bound.consuming, offsets.consuming), and the write
# itself: both take the target's location; they get the version it was read at and the record.
Consuming = Callable[[str, int, dict[str, Any]], AbstractContextManager[None]]
Write = Callable[[str, dict[str, Any]], None]

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
STATEMENT_COMMITTED = "statement.committed"


def commit_write(
    spark: SparkSession,
    catalog: Catalog,
    target: StoredRelation,
    operation: str,
    consuming: Consuming,
    write: Write,
) -> Result:
    """One tagged commit to table `target` (SQL DML or a DataFrame save), found again by its tag,
    and the table's new version and row count recorded."""
    name = target.name
    ensure_log_intact(target)
    before = latest_version(spark, target.location)
    record = new_record(STATEMENT_MARKER, operation=operation)
    with consuming(target.location, before, record):
        write(target.location, record)
    failpoints.reached(STATEMENT_COMMITTED)
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
    before: StoredRelation,
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
