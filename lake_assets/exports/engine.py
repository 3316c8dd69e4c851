"""The statements of changelog exports: CREATE, EXPORT CHANGELOG, SHOW, DESC and DROP.

An export of [start, end) finds its commits by their times, starting where the status table says
the export before it left off (else at the oldest commit kept), reads their changes once as
records, and replaces the range's records in one step: one Delta commit overwriting the range
for a table, one atomic put of `<range>/changelog.<ext>` for a volume. A small export's records
come into this process as Arrow and are written there; a larger one's are written by Spark.
Re-running a range gives the same records, never duplicates, and a range exported in full is not
read again."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaProtocolError
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import Marker, find, new_record, writer_options
from lake_assets.core.delta import (
    Commit,
    commits_from,
    history,
    latest_version,
    local_table,
    log_actions,
    log_versions,
    row_changes,
)
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import drop_object, name_taken
from lake_assets.core.results import Result
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.exports import status
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.grammar import CreateExport, ExportChangelog, TimeRange
from lake_assets.exports.records import (
    DUPLICATE_KEY,
    NULL_KEY,
    OP_TYPE,
    RECORD_NAMES,
    OpType,
    record_columns,
    records_query,
)
from lake_assets.sql.statements import DescribeObject, DropObject
from lake_assets.streams.changelog import data_changes
from lake_assets.tables.dml import record_commit_state
from lake_assets.tables.engine import create_table
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.grammar import CreateTable
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import file_name, put_single, staged, staged_parquet, store_of

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

Source = TableEntry | DynamicTableEntry
T = TypeVar("T")
# Spark failures worth another try: a lost race on a commit, or storage that did not answer.
_TRANSIENT = ("DELTA_CONCURRENT", "IOException", "SocketTimeout", "Connection reset", "SlowDown")
_NOT_TRANSIENT = ("FileNotFoundException", "FILE_NOT_FOUND")
_BACKOFF_SECONDS, _BACKOFF_CAP = 0.5, 10.0
# The most records an export brings into this process (some 100 MB of Arrow) to write them
# itself, with delta-rs to a local table or pyarrow to a Parquet file; more are written by Spark.
_IN_PROCESS = 1_000_000


@dataclass(frozen=True)
class Span:
    """What one export of a range read: the commits in it that changed data ((version, time in
    ms), oldest first), where it started scanning, the last version it covered, how many
    commits it opened, and whether no later commit can fall in the range."""

    commits: tuple[tuple[int, int], ...]
    first_version: int
    last_version: int
    versions_read: int
    complete: bool
    rows_changed: int | None  # by the commits, as their metrics say; None when one does not

    def records_at_most(self, values: int) -> int | None:
        """A bound on the records: a changed row gives one per value column at most."""
        return None if self.rows_changed is None else self.rows_changed * max(values, 1)


@dataclass(frozen=True)
class Records:
    """A range's records to write, and at most how many there are (None: not known)."""

    frame: DataFrame
    at_most: int | None

    @property
    def few(self) -> bool:
        """Few enough to bring into this process as Arrow, where writing them skips Spark's
        per-write planning (a few hundred milliseconds)."""
        return self.at_most is not None and self.at_most <= _IN_PROCESS


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


def _source(catalog: Catalog, name: str) -> Source:
    """The table or dynamic table an export reads, keyed and with its changes tracked."""
    entry = catalog.relation(name)
    if not isinstance(entry, TableEntry | DynamicTableEntry):
        raise LakeError(
            f"{name} is a {entry.LABEL}: a changelog export reads a table or a dynamic table",
            f"export the table it reads instead of {name}",
        )
    words = "ALTER TABLE" if isinstance(entry, TableEntry) else "ALTER DYNAMIC TABLE"
    if not entry.primary_key:
        raise LakeError(
            f"{entry.LABEL} {name} has no primary key, which a changelog export needs",
            f"declare one with {words} {name} SET PRIMARY KEY (col, …)",
        )
    if isinstance(entry, TableEntry) and not entry.change_tracking:
        raise LakeError(
            f"table {name} does not track its changes, which a changelog export reads",
            f"ALTER TABLE {name} SET PROPERTIES ('change_tracking' = 'true') first; changes "
            "committed from then on can be exported",
        )
    return entry


def _key_columns(source: Source, key: Iterable[str]) -> tuple[list[Column], list[Column]]:
    """The source's key columns in key order, and its other columns in table order."""
    by_name = {column.name.lower(): column for column in source.columns}
    missing = [name for name in key if name.lower() not in by_name]
    if missing:
        raise LakeError(
            f"{source.LABEL} {source.name} has no column {missing[0]} of its export's key",
            "DROP the changelog export and CREATE it again for the table's key",
        )
    keys = [by_name[name.lower()] for name in key]
    return keys, [column for column in source.columns if column not in keys]


def _ensure_table(session: Context, name: str, columns: Iterable[Column], use: str) -> None:
    """Create table `name` with `columns`, or check that the one there has them."""
    wanted = [(c.name.lower(), c.type.lower()) for c in columns]
    existing = session.catalog.find_relation(name)
    if existing is None:
        create_table(session, CreateTable(name, tuple(columns), f"{use}, written by lake"))
        return
    shape = [(c.name.lower(), c.type.lower()) for c in getattr(existing, "columns", ())]
    if not isinstance(existing, TableEntry) or shape != wanted:
        raise LakeError(
            f"{existing.LABEL} {name} cannot hold the {use}: it needs the columns "
            + ", ".join(f"{n} {t.upper()}" for n, t in wanted),
            "name another table, or drop this one",
        )


def create_export(session: Context, stmt: CreateExport) -> Result:
    catalog = session.catalog
    if taken := name_taken(session, ExportEntry, stmt.name, stmt.if_not_exists):
        return taken
    source = _source(catalog, stmt.source)
    keys, _ = _key_columns(source, source.primary_key)
    clashing = [column.name for column in keys if column.name.lower() in RECORD_NAMES]
    if clashing:
        raise LakeError(
            f"changelog export {stmt.name}: key column {clashing[0]} of {source.name} has the name "
            "of a record column, which its records could not hold beside it",
            f"export a table whose key columns are not named {', '.join(RECORD_NAMES)}",
        )
    if stmt.to_volume is not None:
        catalog.get(VolumeEntry, stmt.to_volume)
    if stmt.to_table is not None:
        writer = next(
            (e.name for e in catalog.entries(ExportEntry) if e.to_table == stmt.to_table), None
        )
        if writer is not None or stmt.to_table in (stmt.source, stmt.status_table):
            raise LakeError(
                f"table {stmt.to_table} cannot take export {stmt.name}'s records: "
                + (f"changelog export {writer} writes it" if writer else "the export reads it"),
                "give each export a table of its own",
            )
        columns = record_columns(keys, stmt.sequence_info)
        _ensure_table(session, stmt.to_table, columns, f"records of changelog export {stmt.name}")
    _ensure_table(session, stmt.status_table, status.COLUMNS, "status of changelog exports")
    catalog.add(
        ExportEntry(
            stmt.name,
            source=source.name,
            key=tuple(column.name for column in keys),
            to_table=stmt.to_table,
            to_volume=stmt.to_volume,
            subdirectory=stmt.subdirectory,
            file_format=stmt.file_format,
            status_table=stmt.status_table,
            sequence_info=stmt.sequence_info,
            max_retries=stmt.max_retries,
            comment=stmt.comment,
        )
    )
    return Result.status(f"created changelog export {stmt.name}")


def export_changelog(session: Context, stmt: ExportChangelog) -> Result:
    return export_range(session, stmt.name, stmt.range).result()


def export_range(session: Context, name: str, window: TimeRange) -> Outcome:
    """Export the range's records (the one way Dagster's partitions and EXPORT CHANGELOG do)."""
    catalog, spark = session.catalog, session.spark
    export = catalog.get(ExportEntry, name)
    source = _source(catalog, export.source)
    keys, values = _key_columns(source, export.key)
    table = catalog.get(TableEntry, export.status_table)
    runs = _retrying(export, lambda: status.runs(spark, table, name, source.name))
    span = _scan(spark, source, window, runs)
    if span is None:
        return Outcome(export, window, None, {})
    commits, sequence = span.commits, export.sequence_info

    def frame() -> DataFrame:
        if not commits:
            return spark.createDataFrame([], _schema(record_columns(keys, sequence)))
        return spark.sql(records_query(source.location, keys, values, commits, sequence))

    write = _to_table if export.to_table is not None else _to_volume
    at_most = span.records_at_most(len(values))
    counts = _retrying(export, lambda: write(session, export, window, Records(frame(), at_most)))
    failpoints.reached(failpoints.EXPORT_AFTER_WRITE)
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
    _retrying(
        export, lambda: status.record(spark, catalog, catalog.get(TableEntry, table.name), run)
    )
    return Outcome(export, window, span, counts)


def _scan(
    spark: SparkSession, source: Source, window: TimeRange, runs: list[status.Status]
) -> Span | None:
    """The range's commits, scanned from where the status says to start; None when the range
    was exported in full, or as far as the table's newest commit, already."""
    latest_known = latest_version(spark, source.location)
    same = [run for run in runs if (run.range_start, run.range_end) == (window.start, window.end)]
    if same and (same[-1].complete or same[-1].last_version >= latest_known):
        return None
    before = [run.last_version for run in runs if run.range_end <= window.start]
    oldest = _oldest(spark, source.location)
    begin = same[-1].first_version if same else max(before) + 1 if before else oldest
    if begin < oldest:
        raise LakeError(
            f"{source.LABEL} {source.name}'s history before version {oldest} is no longer kept, "
            f"and the export needs it from version {begin}",
            "export ranges after the oldest commit kept (DESC HISTORY shows it), or keep "
            "history longer (Delta's delta.logRetentionDuration)",
        )
    commits: list[tuple[int, int]] = []
    read, last, complete = 0, begin - 1, False
    changed: int | None = 0
    for commit in commits_from(spark, source.location, begin):
        read += 1
        millis = _millis(commit)
        if millis >= window.end:
            complete = True
            break
        last = commit.version
        if millis >= window.start and _changes_data(source.location, commit):
            commits.append((commit.version, millis))
            rows = row_changes(commit.operation or "", commit.operation_metrics)
            changed = None if changed is None or rows is None else changed + sum(rows)
    complete = complete or time.time() * 1000 >= window.end
    return Span(tuple(commits), begin, last, read, complete, changed)


def _oldest(spark: SparkSession, location: str) -> int:
    """The oldest commit kept (log retention removes older ones)."""
    versions = log_versions(location)
    return versions[-1] if versions else history(spark, location)[-1].version


def _millis(commit: Commit) -> int:
    return int(commit.timestamp.replace(tzinfo=UTC).timestamp() * 1000)


def _changes_data(location: str, commit: Commit) -> bool:
    """Whether the commit added or removed rows: others (CREATE, properties) have no records,
    and no change data either when change tracking was turned on after them."""
    actions = log_actions(location, commit.version)
    if actions is not None:
        return bool(data_changes(actions))
    changes = row_changes(commit.operation or "", commit.operation_metrics)
    return changes is None or any(changes)


def _schema(columns: Iterable[Column]) -> StructType:
    schema = StructType.fromDDL(", ".join(f"`{c.name}` {c.type}" for c in columns))
    assert isinstance(schema, StructType), "a list of columns is a struct"
    return schema


def _to_table(
    session: Context, export: ExportEntry, window: TimeRange, records: Records
) -> dict[str, int]:
    """Replace the range's records in the export's table in one commit."""
    assert export.to_table is not None
    catalog, spark = session.catalog, session.spark
    target = catalog.get(TableEntry, export.to_table)
    in_range = f"version >= {window.start} AND version < {window.end}"
    record = new_record(Marker.EXPORT, export=export.name, range=window.label)
    folder = local_table(target.location)
    written = None
    if folder is not None and records.few:
        written = _replaced_in_process(folder, records.frame, in_range, record)
    if written is None:
        observed, counts = _counted(records.frame)
        observed.write.format("delta").mode("overwrite").option("replaceWhere", in_range).options(
            **writer_options(record)
        ).save(target.location)
        written = counts()
    commit = find(spark, target.location, record, after=target.version or 0)
    if commit is None:  # nothing to add or remove: Delta commits nothing
        return written
    # REPLACE WHERE: the range's records before are deleted, the new ones written.
    deleted = int(commit.operation_metrics.get("numDeletedRows", -1))
    changes = (sum(written.values()), 0, deleted) if deleted >= 0 else None
    record_commit_state(spark, catalog, target, commit.version, changes)
    return written


def _replaced_in_process(
    folder: Path, frame: DataFrame, in_range: str, record: dict[str, Any]
) -> dict[str, int] | None:
    """The records, brought to this process as Arrow and written by delta-rs: a few hundred
    milliseconds less than Spark's REPLACE WHERE, which plans a DELETE of its own first. None,
    having written nothing, when a table feature keeps delta-rs from writing the table or another
    writer committed first: Spark then writes them, with its own conflict checks and retries."""
    records = frame.toArrow()
    try:
        write_deltalake(
            str(folder),
            records,
            mode="overwrite",
            predicate=in_range,
            commit_properties=CommitProperties(custom_metadata=writer_options(record)),
        )
    except (DeltaProtocolError, CommitFailedError):
        return None
    return _op_counts(records)


def _op_counts(records: pa.Table) -> dict[str, int]:
    return {op["values"]: op["counts"] for op in pc.value_counts(records[OP_TYPE]).to_pylist()}


def _to_volume(
    session: Context, export: ExportEntry, window: TimeRange, records: Records
) -> dict[str, int]:
    """Put the range's records as one file, `[SUBDIRECTORY/]<range>/changelog.<ext>`, which
    replaces the one an earlier export of the range put there."""
    assert export.to_volume is not None
    volume = session.catalog.get(VolumeEntry, export.to_volume)
    store = store_of(session.catalog, session.settings, volume)
    folder = "/".join(part for part in (export.subdirectory, window.label) if part)
    name = f"{folder}/{file_name('changelog', export.file_format)}"
    writer = f"changelog export {export.name}"
    if export.file_format == "PARQUET" and records.few:
        arrow = records.frame.toArrow()
        with staged_parquet(arrow, session.settings.lake_home / "tmp") as parts:
            put_single(volume, store, name, parts, writer)
        return _op_counts(arrow)
    observed, counts = _counted(records.frame)
    with staged(observed, export.file_format, {}, session.settings) as parts:
        put_single(volume, store, name, parts, writer)
    return counts()


def _counted(frame: DataFrame) -> tuple[DataFrame, Callable[[], dict[str, int]]]:
    """`frame`, counting its records by op type as it is written (no second Spark job), and
    how to read the counts once it has been."""
    observation = Observation()
    observed = frame.observe(
        observation, *(F.count_if(F.col(OP_TYPE) == op.value).alias(op.value) for op in OpType)
    )
    return observed, lambda: {op: int(n) for op, n in observation.get.items() if n}


def _retrying(export: ExportEntry, action: Callable[[], T]) -> T:
    """`action`, tried again after a transient failure up to MAX_RETRIES times, waiting longer
    each time (30 tries take about four minutes, as a managed changelog export's do)."""
    for attempt in range(export.max_retries + 1):
        try:
            return action()
        except (PySparkException, Py4JJavaError) as error:  # a failed write is the second
            if attempt == export.max_retries or not _transient(error):
                raise _explained(export, error) from error
        time.sleep(min(_BACKOFF_SECONDS * 2**attempt, _BACKOFF_CAP))
    raise AssertionError("unreachable")


def _transient(error: BaseException) -> bool:
    text = str(error)
    return any(mark in text for mark in _TRANSIENT) and not any(m in text for m in _NOT_TRANSIENT)


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


def show_exports(session: Context) -> Result:
    return Result(
        ["name", "source", "target", "status_table", "sequence_info", "comment", "created_at"],
        [
            (e.name, e.source, e.target, e.status_table, e.sequence_info, e.comment, e.created_at)
            for e in session.catalog.entries(ExportEntry)
        ],
    )


def describe_export(session: Context, stmt: DescribeObject) -> Result:
    export = session.catalog.get(ExportEntry, stmt.name)
    rows = [
        ("name", export.name),
        ("source", export.source),
        ("primary_key", ", ".join(export.key)),
        ("target", export.target),
        ("file_format", export.file_format if export.to_volume else None),
        ("status_table", export.status_table),
        ("export_sequence_info", str(export.sequence_info).upper()),
        ("max_retries", str(export.max_retries)),
        ("comment", export.comment),
        ("created_at", export.created_at),
    ]
    return Result(["property", "value"], rows)


def drop_export(session: Context, stmt: DropObject) -> Result:
    """DROP CHANGELOG EXPORT; its rows leave the status table, so a new export of the name
    starts afresh. Its records stay where they were written."""

    def forget(export: ExportEntry) -> None:
        table = session.catalog.find(TableEntry, export.status_table)
        if table is not None:
            status.forget(session.spark, session.catalog, table, export.name)

    return drop_object(ExportEntry, forget)(session, stmt)
