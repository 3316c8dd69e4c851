"""A COPY batch's files read into rows, and the bad files sorted out, apart from the commit."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from typing import Any
from urllib.parse import unquote

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lake_assets.core.delta import quote_name
from lake_assets.core.entries import Column
from lake_assets.core.names import hidden
from lake_assets.pipes.copy_options import OnError
from lake_assets.pipes.diagnose import first_problem, record_problem, unreadable
from lake_assets.pipes.file_formats import formats_of
from lake_assets.pipes.format_reading import nulls_applied, skipped
from lake_assets.pipes.headers import Layouts
from lake_assets.volumes.files import column_ddl, file_reader, load_files
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import VolumeStore

_CORRUPT = hidden("corrupt_record")
_FILE = hidden("file")
_ID = hidden("record_id")
# Of a file's rejected records, the first these many are kept (all are counted), each cut to
# RAW_KEPT characters: a file wrong throughout is better skipped than kept record by record.
REJECTED_KEPT = 1000
RAW_KEPT = 2000


class _Malformed(Exception):
    """Some file in the batch has a record that does not fit the table."""


def parse_files(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    *,
    strict: bool,
    layouts: Layouts | None = None,
) -> DataFrame:
    """The files' rows; strict reading fails on the first bad record, lenient marks it. With
    `layouts`, each file is read with its own columns, and its rows given `columns`."""
    if layouts:
        groups: dict[tuple[Column, ...], list[str]] = defaultdict(list)
        for path in paths:
            groups[layouts[path]].append(path)
        frames = [
            _given(parse_files(spark, source, store, read, group, strict=strict), columns)
            for read, group in groups.items()
        ]
        return reduce(DataFrame.unionByName, frames)
    reader = file_reader(spark, source, store)
    if source.file_format == "PARQUET":
        frame = load_files(reader, paths)
        present = {name.lower(): name for name in frame.columns}
        missing = [c.name for c in columns if c.name.lower() not in present]
        if missing and strict:
            raise _Malformed(missing[0])
        selected = [
            F.col(quote_name(present[c.name.lower()])).cast(c.type).alias(c.name)
            if c.name.lower() in present
            else F.lit(None).cast(c.type).alias(c.name)
            for c in as_read(columns)
        ]
        problem = F.lit(f"column {missing[0]} is missing") if missing else F.lit(None)
        return frame.select(
            *selected,
            problem.cast("string").alias(_CORRUPT),
            F.col("_metadata.file_path").alias(_FILE),
            F.monotonically_increasing_id().alias(_ID),
        )
    if strict:
        strict_reader = reader.option("mode", "FAILFAST").schema(column_ddl(as_read(columns)))
        return load_files(strict_reader, paths)
    lenient_reader = (
        reader.option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", _CORRUPT)
        .schema(f"{column_ddl(as_read(columns))}, `{_CORRUPT}` STRING")
    )
    frame = load_files(lenient_reader, paths)
    formats = formats_of(source)
    frame = frame.withColumn(_FILE, F.col("_metadata.file_path")).withColumn(
        _ID, F.monotonically_increasing_id()
    )
    frame = skipped(frame, formats.skip_header, _FILE, _ID)
    return nulls_applied(frame, source, as_read(columns), formats.null_if, _CORRUPT)


def _given(frame: DataFrame, columns: tuple[Column, ...]) -> DataFrame:
    """A file's rows in `columns` (NULL where the file lacks one), and the read's own marks; a
    JSON file's keys are read as the file spells them, matched in any case."""
    present = {name.lower(): name for name in frame.columns}
    return frame.select(
        *[
            F.col(quote_name(present[c.name.lower()])).alias(c.name)
            if c.name.lower() in present
            else F.lit(None).cast(c.type).alias(c.name)
            for c in as_read(columns)
        ],
        *[F.col(mark) for mark in (_CORRUPT, _FILE, _ID) if mark in present],
    )


def rows_per_file(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
) -> dict[str, int]:
    """Each file's row count, without converting any value (the cheap pass)."""
    reader = file_reader(spark, source, store)
    if source.file_format != "PARQUET":
        reader = reader.schema(column_ddl(as_read(columns)))
    counts = load_files(reader, paths).groupBy(F.col("_metadata.file_path").alias(_FILE)).count()
    return {_read_path(row[_FILE]): row["count"] for row in counts.collect()}


@dataclass(frozen=True)
class Rejected:
    """A record a load rejected: its line in the file (a header and the lines
    skip_header skips counted), the column that did not fit (None: the record as a whole), why,
    and the record as read (None for Parquet)."""

    row_number: int
    column_name: str | None
    error: str
    raw_record: str | None


@dataclass
class SortedOut:
    """What a batch's lenient read found: the records that load, per file path their count, each
    failed file's problem, and each partly loaded file's rejected records (their count, and the
    first REJECTED_KEPT of them)."""

    rows: DataFrame | None = None
    counts: dict[str, int] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    rejected: dict[str, tuple[int, list[Rejected]]] = field(default_factory=dict)


def _sort_files(
    frame: DataFrame,
    source: VolumeSource,
    columns: tuple[Column, ...],
    on_error: OnError,
    out: SortedOut,
    layouts: Layouts | None,
) -> DataFrame | None:
    """Sort one lenient read's files into `out`; return its records that load. A bad record is
    diagnosed with its file's own columns (`layouts`), in the file's order."""
    stats = (
        frame.groupBy(_FILE)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count(F.col(_CORRUPT)).alias("bad"),
            F.first(F.col(_CORRUPT), ignorenulls=True).alias("first_bad"),
        )
        .collect()
    )
    failed, partial = [], []
    for row in stats:
        path = _read_path(row[_FILE])
        if on_error.skips(row["rows"], row["bad"]):
            read = (layouts or {}).get(path, columns)
            out.problems[path] = first_problem(source, read, row["first_bad"])
            failed.append(row[_FILE])
            continue
        out.counts[path] = row["rows"] - row["bad"]
        if row["bad"]:
            partial.append(row[_FILE])
            out.rejected[path] = (row["bad"], [])
    if failed and len(failed) == len(stats):
        return None
    if partial:
        for uri, rejected in _rejected_records(frame, source, columns, partial, layouts):
            out.rejected[_read_path(uri)][1].append(rejected)
    return frame.filter(~F.col(_FILE).isin(failed) & F.col(_CORRUPT).isNull())


def _rejected_records(
    frame: DataFrame,
    source: VolumeSource,
    columns: tuple[Column, ...],
    uris: list[str],
    layouts: Layouts | None,
) -> list[tuple[str, Rejected]]:
    """The first REJECTED_KEPT bad records of each file, numbered by their line in the file
    (a header and the lines skip_header skips counted): a file's records keep their order in
    their read's ids."""
    in_file = Window.partitionBy(_FILE).orderBy(_ID)
    before = formats_of(source).skip_header + int(source.has_header)
    numbered = (
        frame.filter(F.col(_FILE).isin(uris))
        .withColumn("row_number", F.row_number().over(in_file) + before)
        .filter(F.col(_CORRUPT).isNotNull())
        .withColumn("kept", F.row_number().over(in_file))
        .filter(F.col("kept") <= REJECTED_KEPT)
        .select(_FILE, "row_number", _CORRUPT)
        .collect()
    )
    found = []
    for row in sorted(numbered, key=lambda row: (row[_FILE], row["row_number"])):
        read = (layouts or {}).get(_read_path(row[_FILE]), columns)
        column, error = record_problem(source, read, row[_CORRUPT])
        raw = None if source.file_format == "PARQUET" else row[_CORRUPT][:RAW_KEPT]
        found.append((row[_FILE], Rejected(row["row_number"], column, error, raw)))
    return found


def is_malformed(error: Exception) -> bool:
    return isinstance(error, _Malformed) or "MALFORMED_RECORD_IN_PARSING" in str(error)


@contextmanager
def sorting_out(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    error: Exception | None,
    on_error: OnError,
    layouts: Layouts | None = None,
) -> Iterator[SortedOut]:
    """The batch sorted out by `on_error` (its reads cached until the block ends), after the
    strict read failed with `error` (None: not tried)."""
    cached: list[DataFrame] = []
    try:
        yield _sort_out(spark, source, store, columns, paths, error, on_error, layouts, cached)
    finally:
        for frame in cached:
            frame.unpersist()


def _sort_out(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    error: Exception | None,
    on_error: OnError,
    layouts: Layouts | None,
    cached: list[DataFrame],
) -> SortedOut:
    """One lenient pass over the batch when a record does not fit; when a file cannot be read
    (or that pass fails on one), a pass per file, so that only the files Spark cannot read fail
    (each read alone, so also with its own Parquet schema)."""
    if error is None or is_malformed(error):
        frame = parse_files(
            spark, source, store, columns, paths, strict=False, layouts=layouts
        ).cache()
        cached.append(frame)
        out = SortedOut()
        try:
            out.rows = _sort_files(frame, source, columns, on_error, out, layouts)
        except Exception as again:  # a file Spark cannot read: sorted out file by file below
            if unreadable(again) is None:
                raise
        else:
            return out
    out, frames = SortedOut(), []
    for path in paths:
        try:
            frame = parse_files(
                spark, source, store, columns, [path], strict=False, layouts=layouts
            ).cache()
            cached.append(frame)
            loads = _sort_files(frame, source, columns, on_error, out, layouts)
        except Exception as failure:  # whether this file is to blame, `unreadable` says
            problem = unreadable(failure)
            if problem is None:
                raise
            out.problems[path] = problem
            continue
        if loads is not None:
            frames.append(loads)
    out.rows = reduce(DataFrame.unionByName, frames) if frames else None
    return out


def as_table_rows(
    frame: DataFrame, table: tuple[Column, ...], columns: tuple[Column, ...]
) -> DataFrame:
    """The table's columns in its order and types, from the columns the files were read with."""
    return frame.select(*_table_values(table, columns))


def _table_values(table: tuple[Column, ...], columns: tuple[Column, ...]) -> list[SparkColumn]:
    read = {c.name.lower(): c.name for c in columns}
    return [
        F.col(quote_name(read[c.name.lower()])).cast(t.type).alias(t.name)
        for c, t in zip(table, as_read(table), strict=True)
    ]


def first_records(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    table: tuple[Column, ...],
    columns: tuple[Column, ...],
    paths: list[str],
    count: int,
    layouts: Layouts | None = None,
) -> list[tuple[str, int, str | None, tuple[Any, ...]]]:
    """The first `count` records of the files, in their order: each one's file, number in it,
    the raw record if it does not fit (else None), and its values as they would load."""
    frame = parse_files(spark, source, store, columns, paths, strict=False, layouts=layouts)
    in_file = Window.partitionBy(_FILE).orderBy(_ID)
    values = F.struct(*_table_values(table, columns)).alias("values")
    skipped = formats_of(source).skip_header
    first = (
        frame.withColumn("row_number", F.row_number().over(in_file) + skipped)
        .select(_FILE, "row_number", _CORRUPT, values)
        .orderBy(_FILE, "row_number")
        .limit(count)
        .collect()
    )
    return [
        (_read_path(row[_FILE]), row["row_number"], row[_CORRUPT], tuple(row["values"]))
        for row in first
    ]


def as_read(columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """Spark reads CHAR/VARCHAR as STRING; Delta checks the length when the rows are written."""
    return tuple(
        Column(c.name, "STRING") if c.type.startswith(("VARCHAR", "CHAR")) else c for c in columns
    )


def _read_path(uri: str) -> str:
    """Spark's file URI (file:/x or file:///x, or s3a://b/x; percent-encoded) back to the path
    Spark was given."""
    if not uri.startswith("file:"):
        return unquote(uri)
    return "/" + unquote(uri.removeprefix("file:")).lstrip("/")
