"""COPY INTO a table from a volume, exactly once.

A batch's rows and its load records go into ONE Delta commit: the records ride in the commit's
userMetadata. The SQLite load-history index is rebuilt from those commits (`reconcile`) before
every load, so a crash between the commit and the index update loses nothing and loads nothing
twice. Concurrent loaders are fenced by Delta's idempotent writes (txnAppId/txnVersion)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import reduce
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import (
    Marker,
    commits_since,
    decode,
    fence_at,
    fenced_write,
    new_record,
    writer_options,
)
from lake_assets.core.delta import row_count
from lake_assets.core.entries import Column, LoadRecord, now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.names import hidden
from lake_assets.core.states import LoadStatus
from lake_assets.pipes.diagnose import first_problem, unreadable
from lake_assets.tables.dml import record_commit_state
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.files import column_ddl, file_reader, load_files
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import FileInfo, VolumeStore

# Files modified this recently may still be being written; they wait for the next look.
SETTLE_SECONDS = 1.0
_CORRUPT = hidden("corrupt_record")
_FILE = hidden("file")


@dataclass
class LoadOutcome:
    table: str
    version: int | None
    records: list[LoadRecord]
    purged: list[str]

    @property
    def rows(self) -> int:
        return sum(
            record.rows_loaded for record in self.records if record.status == LoadStatus.LOADED
        )

    def count(self, status: str) -> int:
        return sum(1 for record in self.records if record.status == status)

    def summary(self) -> str:
        at = f"; {self.table} is at version {self.version}" if self.version is not None else ""
        return (
            f"COPY: {self.count(LoadStatus.LOADED)} files loaded ({self.rows} rows), "
            f"{self.count(LoadStatus.LOAD_FAILED)} failed, {len(self.purged)} purged{at}"
        )


def reconcile(spark: SparkSession, catalog: Catalog, table: TableEntry) -> int:
    """Copy the load records carried by commits newer than the index's mark into the index;
    return the table's newest version: the next load acts on the index as of it, and its commit
    is fenced by the load records up to it (see _commit)."""
    mark = catalog.load_mark(table.name)
    commits = commits_since(spark, table.location, mark)
    newest = commits[0].version
    if newest <= mark:
        return newest
    records = []
    for commit in commits:
        metadata = decode(commit.user_metadata, Marker.LOAD)
        if metadata is None:
            continue
        for path, size, modified, rows in metadata["files"]:
            records.append(
                LoadRecord(
                    path, metadata["time"], size, modified, LoadStatus.LOADED, rows, None,
                    metadata.get("pipe"), commit.version,
                )
            )  # fmt: skip
    catalog.record_loads(table.name, records, newest)
    if table.version is None or table.version < newest:
        # A crash after a load's commit also skipped recording the table's version and rows.
        catalog.record_table_state(table, newest, row_count(spark, table.location, newest))
    return newest


def pending_files(
    catalog: Catalog,
    table: str,
    files: list[FileInfo],
    retention_days: float,
    force: bool = False,
    complete: bool = False,
) -> list[FileInfo]:
    """Files not loaded within the retention window, not failed as they are, and settled (or
    known `complete`: S3 announces an object only once it is whole)."""
    now = datetime.now(UTC)
    since = (now - timedelta(days=retention_days)).isoformat(timespec="milliseconds")
    records = catalog.load_history(table, since)
    loaded = {r.file_path for r in records if r.status == LoadStatus.LOADED}
    failed = {
        (r.file_path, r.file_size, r.file_modified)
        for r in records
        if r.status == LoadStatus.LOAD_FAILED
    }
    settled = now - timedelta(seconds=0 if complete else SETTLE_SECONDS)
    return [
        info
        for info in files
        if info.last_modified <= settled
        and (
            force
            or (
                info.url not in loaded
                and (info.url, info.size, info.last_modified.isoformat()) not in failed
            )
        )
    ]


def loaded_files(
    catalog: Catalog, table: str, files: list[FileInfo], retention_days: float
) -> list[FileInfo]:
    """Files whose rows are committed, unchanged since: the only ones PURGE may delete."""
    since = (datetime.now(UTC) - timedelta(days=retention_days)).isoformat(timespec="milliseconds")
    loaded = {
        (r.file_path, r.file_size, r.file_modified)
        for r in catalog.load_history(table, since)
        if r.status == LoadStatus.LOADED
    }
    return [i for i in files if (i.url, i.size, i.last_modified.isoformat()) in loaded]


def target_columns(table: TableEntry, source: VolumeSource) -> tuple[Column, ...]:
    """The columns read from the files: the table's, or the COPY's own list mapped onto them."""
    if not source.columns:
        return table.columns
    names = {column.name.lower() for column in source.columns}
    missing = [c.name for c in table.columns if c.name.lower() not in names]
    if missing:
        raise LakeError(
            f"column {missing[0]} of table {table.name} is not in the COPY's column list",
            "list every table column in FROM VOLUME v (col TYPE, …)",
        )
    return source.columns


class _Malformed(Exception):
    """Some file in the batch has a record that does not fit the table."""


def _parse(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    *,
    strict: bool,
) -> DataFrame:
    """The files' rows; strict reading fails on the first bad record, lenient marks it."""
    reader = file_reader(spark, source, store)
    if source.file_format == "PARQUET":
        frame = load_files(reader, paths)
        present = {name.lower(): name for name in frame.columns}
        missing = [c.name for c in columns if c.name.lower() not in present]
        if missing and strict:
            raise _Malformed(missing[0])
        selected = [
            F.col(f"`{present[c.name.lower()]}`").cast(c.type).alias(c.name)
            if c.name.lower() in present
            else F.lit(None).cast(c.type).alias(c.name)
            for c in _as_read(columns)
        ]
        problem = F.lit(f"column {missing[0]} is missing") if missing else F.lit(None)
        return frame.select(
            *selected,
            problem.cast("string").alias(_CORRUPT),
            F.col("_metadata.file_path").alias(_FILE),
        )
    if strict:
        strict_reader = reader.option("mode", "FAILFAST").schema(column_ddl(_as_read(columns)))
        return load_files(strict_reader, paths)
    lenient_reader = (
        reader.option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", _CORRUPT)
        .schema(f"{column_ddl(_as_read(columns))}, `{_CORRUPT}` STRING")
    )
    frame = load_files(lenient_reader, paths)
    return frame.withColumn(_FILE, F.col("_metadata.file_path"))


def _rows_per_file(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
) -> dict[str, int]:
    """Each file's row count, without converting any value (the cheap pass)."""
    reader = file_reader(spark, source, store)
    if source.file_format != "PARQUET":
        reader = reader.schema(column_ddl(_as_read(columns)))
    counts = load_files(reader, paths).groupBy(F.col("_metadata.file_path").alias(_FILE)).count()
    return {_read_path(row[_FILE]): row["count"] for row in counts.collect()}


def _file_stats(
    frame: DataFrame, source: VolumeSource, columns: tuple[Column, ...]
) -> tuple[dict[str, int], dict[str, str]]:
    """Row counts of the good files by local path, and each bad file's first problem by URI."""
    stats = (
        frame.groupBy(_FILE)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count(F.col(_CORRUPT)).alias("bad"),
            F.first(F.col(_CORRUPT), ignorenulls=True).alias("first_bad"),
        )
        .collect()
    )
    counts = {_read_path(row[_FILE]): row["rows"] for row in stats if not row["bad"]}
    problems = {
        row[_FILE]: first_problem(source, columns, row["first_bad"]) for row in stats if row["bad"]
    }
    return counts, problems


def _is_malformed(error: Exception) -> bool:
    return isinstance(error, _Malformed) or "MALFORMED_RECORD_IN_PARSING" in str(error)


def load(
    spark: SparkSession,
    catalog: Catalog,
    table: TableEntry,
    source: VolumeSource,
    store: VolumeStore,
    files: list[FileInfo],
    *,
    fence: int,
    pipe: str | None = None,
) -> LoadOutcome:
    """Load `files` (already filtered to pending ones) into `table` in one commit; `fence` is
    the table's newest version when `reconcile` brought the index up to date.

    One pass when every file reads and every record fits (the usual case); otherwise the bad
    files are sorted out (`_sorted_out`) and fail alone, and the good ones still load."""
    if not files:
        return LoadOutcome(table.name, None, [], [])
    columns = target_columns(table, source)
    local = {store.spark_path(info.relative_path): info for info in files}
    now = now_utc()
    failed: list[LoadRecord] = []
    version = None
    good: list[tuple[FileInfo, int]] = []
    try:
        good = _good(local, _rows_per_file(spark, source, store, columns, list(local)))
        rows = _parse(spark, source, store, columns, list(local), strict=True)
        version = _commit(spark, catalog, table, rows, columns, good, now, pipe, fence)
    except Exception as error:  # a bad file aborts the write before its commit
        if not _is_malformed(error) and unreadable(error) is None:
            raise
        with _sorted_out(spark, source, store, columns, list(local), error) as sorted_out:
            good_rows, counts, problems = sorted_out
            for path, problem in problems.items():
                info = local.pop(path)
                failed.append(_record(info, now, LoadStatus.LOAD_FAILED, 0, problem, pipe, None))
            good = _good(local, counts)
            if good and good_rows is not None:
                version = _commit(spark, catalog, table, good_rows, columns, good, now, pipe, fence)
    loaded = [_record(info, now, LoadStatus.LOADED, n, None, pipe, version) for info, n in good]
    # Right after the reconciled version, this commit's records complete the index up to it.
    mark = version if version == fence + 1 else None
    catalog.record_loads(table.name, loaded + failed, mark)
    return LoadOutcome(table.name, version, loaded + failed, [])


def _good(local: dict[str, FileInfo], counts: dict[str, int]) -> list[tuple[FileInfo, int]]:
    return [(info, counts.get(path, 0)) for path, info in local.items()]


@contextmanager
def _sorted_out(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    error: Exception,
) -> Iterator[tuple[DataFrame | None, dict[str, int], dict[str, str]]]:
    """The good files' rows (cached until the block ends), their row counts, and each bad
    file's problem, by path."""
    cached: list[DataFrame] = []
    try:
        yield _sort_out(spark, source, store, columns, paths, error, cached)
    finally:
        for frame in cached:
            frame.unpersist()


def _sort_out(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    error: Exception,
    cached: list[DataFrame],
) -> tuple[DataFrame | None, dict[str, int], dict[str, str]]:
    """One lenient pass over the batch when a record does not fit; when a file cannot be read
    (or that pass fails on one), a pass per file, so that only the files Spark cannot read fail
    (each read alone, so also with its own Parquet schema)."""
    if _is_malformed(error):
        frame = _parse(spark, source, store, columns, paths, strict=False).cache()
        cached.append(frame)
        try:
            counts, problems = _file_stats(frame, source, columns)
        except Exception as again:  # a file Spark cannot read: sorted out file by file below
            if unreadable(again) is None:
                raise
        else:
            good = frame.filter(~F.col(_FILE).isin(list(problems)))
            return good, counts, {_read_path(uri): text for uri, text in problems.items()}
    frames: list[DataFrame] = []
    counts, problems = {}, {}
    for path in paths:
        try:
            frame = _parse(spark, source, store, columns, [path], strict=False).cache()
            cached.append(frame)
            file_counts, file_problems = _file_stats(frame, source, columns)
        except Exception as failure:  # whether this file is to blame, `unreadable` says
            problem = unreadable(failure)
            if problem is None:
                raise
            problems[path] = problem
            continue
        if file_problems:
            problems[path] = next(iter(file_problems.values()))
        else:
            frames.append(frame)
            counts.update(file_counts)
    return (reduce(DataFrame.unionByName, frames) if frames else None), counts, problems


def _as_read(columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """Spark reads CHAR/VARCHAR as STRING; Delta checks the length when the rows are written."""
    return tuple(
        Column(c.name, "STRING") if c.type.startswith(("VARCHAR", "CHAR")) else c for c in columns
    )


def _as_table_rows(frame: DataFrame, table: TableEntry, columns: tuple[Column, ...]) -> DataFrame:
    """The table's columns in its order and types, from the columns the files were read with."""
    read = {c.name.lower(): c.name for c in columns}
    return frame.select(
        *[
            F.col(f"`{read[c.name.lower()]}`").cast(t.type).alias(t.name)
            for c, t in zip(table.columns, _as_read(table.columns), strict=True)
        ]
    )


def _read_path(uri: str) -> str:
    """Spark's file URI (file:/x or file:///x, or s3a://b/x; percent-encoded) back to the path
    Spark was given."""
    if not uri.startswith("file:"):
        return unquote(uri)
    return "/" + unquote(uri.removeprefix("file:")).lstrip("/")


def _record(
    info: FileInfo, now: str, status: str, rows: int, error: str | None, pipe: str | None,
    version: int | None,
) -> LoadRecord:  # fmt: skip
    return LoadRecord(
        info.url, now, info.size, info.last_modified.isoformat(), status, rows, error, pipe, version
    )


def _commit(
    spark: SparkSession,
    catalog: Catalog,
    table: TableEntry,
    rows: DataFrame,
    columns: tuple[Column, ...],
    good: list[tuple[FileInfo, int]],
    now: str,
    pipe: str | None,
    version: int,
) -> int:
    """Append the rows with their files' load records in the same commit; return its version.
    Fenced by the load records up to `version`, which `reconcile` put in the index: a load that
    committed after them, whatever else committed too, makes Delta drop this write."""
    record = new_record(
        Marker.LOAD,
        pipe=pipe,
        time=now,
        files=[[i.url, i.size, i.last_modified.isoformat(), n] for i, n in good],
    )
    before = catalog.get(TableEntry, table.name)
    fence, _ = fence_at(spark, table.location, f"lake-load-{table.name}", Marker.LOAD, version)
    frame = _as_table_rows(rows, table, columns)

    def write() -> None:
        failpoints.reached(failpoints.BEFORE_COMMIT)
        options = writer_options(record, fence)
        frame.write.format("delta").mode("append").options(**options).save(table.location)
        failpoints.reached(failpoints.AFTER_COMMIT)

    commit = fenced_write(spark, table.location, record, fence, write)
    if commit is None:
        raise LakeError(
            f"another load into {table.name} committed at the same moment; nothing was written",
            "run the load again: files already loaded are skipped",
        )
    inserted = sum(count for _, count in good)
    record_commit_state(spark, catalog, before, commit.version, (inserted, 0, 0))
    return commit.version
