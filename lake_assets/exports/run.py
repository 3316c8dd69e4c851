"""EXPORT CHANGELOG: an export of [start, end) scans the range's commits, reads their changes
once as records, replaces the range's records in one step and appends a row to the status table,
each step tried again after a transient failure. Re-running a range gives the same records, never
duplicates, and a range exported in full is not read again."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from lake_assets.core import failpoints
from lake_assets.core.delta import quote_name
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.results import Result
from lake_assets.core.spark_errors import SPARK_ERRORS, retrying
from lake_assets.exports import status
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.grammar import ExportChangelog, TimeRange
from lake_assets.exports.records import (
    DUPLICATE_KEY,
    NULL_KEY,
    OpType,
    record_columns,
    records_query,
)
from lake_assets.exports.scan import Span, key_columns, scan, source_of
from lake_assets.exports.writing import Records, to_table, to_volume
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.entry import TableEntry

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
EXPORT_AFTER_WRITE = "export-after-write"

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

T = TypeVar("T")
_BACKOFF_SECONDS, _BACKOFF_CAP = 0.5, 10.0


@dataclass(frozen=True)
class Outcome:
    """One EXPORT CHANGELOG: its span and the records it wrote by op type."""

    export: ExportEntry
    window: TimeRange
    span: Span | None  # None: the range was exported already and nothing new was committed
    records: dict[str, int]

    def result(self) -> Result:
        if self.span is None:
            return Result.status(
                f"changelog export {self.export.name}: {self.window.label} is up to date "
                "(exported already, nothing committed since)"
            )
        span, ops = self.span, [op.value for op in OpType]
        versions = [v for v, _ in span.commits]
        return Result(
            [
                "export",
                "range",
                "first_version",
                "last_version",
                "records",
                *ops,
                "versions_read",
                "complete",
            ],
            [
                (
                    self.export.name,
                    self.window.label,
                    versions[0] if versions else None,
                    versions[-1] if versions else None,
                    sum(self.records.values()),
                    *(self.records.get(op, 0) for op in ops),
                    span.versions_read,
                    span.complete,
                )
            ],
        )


def export_changelog(session: Context, stmt: ExportChangelog) -> Result:
    return exporting(session, stmt.name, stmt.range).result()


def exporting(session: Context, name: str, window: TimeRange) -> Outcome:
    """An export whose commit to its target table (if it writes one) is heard as the table's."""
    target = session.catalog.get(ExportEntry, name).to_table
    if target is None:
        return export_range(session, name, window)
    return session.committing(target, lambda: export_range(session, name, window))


def export_range(session: Context, name: str, window: TimeRange) -> Outcome:
    """Export the range's records (the one way Dagster's partitions and EXPORT CHANGELOG do)."""
    catalog, spark = session.catalog, session.spark
    export = catalog.get(ExportEntry, name)
    source = source_of(catalog, export.source)
    keys, values = key_columns(source, export.key)
    # A change of its columns cut off from its record is recorded before this newer version.
    table = recorded_schema(catalog, catalog.get(TableEntry, export.status_table))
    ensure_log_intact(table)  # before the range is written: its row follows the records
    runs = _retrying(export, lambda: status.runs(spark, table, name, source.name))
    span = scan(spark, source, window, runs)
    if span is None:
        return Outcome(export, window, None, {})
    commits, sequence = span.commits, export.sequence_info

    def frame() -> DataFrame:
        if not commits:
            return spark.createDataFrame([], _schema(record_columns(keys, sequence)))
        return spark.sql(records_query(source.location, keys, values, commits, sequence))

    write = to_table if export.to_table is not None else to_volume
    at_most = span.records_at_most(len(values))
    counts = _retrying(export, lambda: write(session, export, window, Records(frame(), at_most)))
    failpoints.reached(EXPORT_AFTER_WRITE)
    run = status.Status(
        name,
        source.name,
        window.start,
        window.end,
        span.first_version,
        span.last_version,
        span.complete,
        sum(counts.values()),
        span.versions_read,
        status.now(),
    )
    session.committing(
        table.name,
        lambda: _retrying(
            export,
            lambda: status.record(spark, catalog, catalog.get(TableEntry, table.name), run),
        ),
    )
    return Outcome(export, window, span, counts)


def _schema(columns: Iterable[Column]) -> StructType:
    schema = StructType.fromDDL(", ".join(f"{quote_name(c.name)} {c.type}" for c in columns))
    assert isinstance(schema, StructType), "a list of columns is a struct"
    return schema


def _retrying(export: ExportEntry, action: Callable[[], T]) -> T:
    """`action`, tried again after a transient failure up to MAX_RETRIES times, waiting longer
    each time (30 tries take about four minutes, as a managed changelog export's do); the
    failure it gives up on is named as well as the export can."""
    try:
        return retrying(
            action,
            when=lambda failure: failure.transient,
            attempts=export.max_retries + 1,
            first_wait=_BACKOFF_SECONDS,
            longest_wait=_BACKOFF_CAP,
            errors=SPARK_ERRORS,
        )
    except SPARK_ERRORS as error:
        raise _explained(export, error) from error


def _explained(export: ExportEntry, error: Exception) -> BaseException:
    """Failures an export can name better than Spark does (by their condition: a message may
    quote the query, and so the key checks' texts); others as they are."""
    text = str(error)
    key = ", ".join(export.key)
    if f"[USER_RAISED_EXCEPTION] {NULL_KEY}" in text:
        nulls = " OR ".join(f"{column} IS NULL" for column in export.key)
        return LakeError(
            f"changelog export {export.name}: a row of {export.source} changed in this range "
            f"has a NULL primary key ({key})",
            f"a key is declared, not enforced: give those rows a key (UPDATE {export.source} "
            f"SET … WHERE {nulls}) and export the ranges after that change, or declare a key "
            "that is never NULL",
        )
    if f"[USER_RAISED_EXCEPTION] {DUPLICATE_KEY}" in text:
        return LakeError(
            f"changelog export {export.name}: two rows of one commit of {export.source} share "
            f"the primary key ({key})",
            "a key is declared, not enforced: make the key's values unique in the table, or "
            "declare a key that is",
        )
    if "DELTA_MISSING_CHANGE_DATA" in text or "DELTA_CHANGE_DATA_FILE_NOT_FOUND" in text:
        return LakeError(
            f"changelog export {export.name}: the changes of {export.source} in this range are "
            "no longer kept (VACUUM removed them, or change tracking was off then)",
            "export a later range; keep change files longer with a longer VACUUM retention",
        )
    return error
