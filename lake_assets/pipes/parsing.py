"""A COPY batch's files read into rows, and the bad files sorted out, apart from the commit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import reduce
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core.entries import Column
from lake_assets.core.names import hidden
from lake_assets.pipes.diagnose import first_problem, unreadable
from lake_assets.volumes.files import column_ddl, file_reader, load_files
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import VolumeStore

_CORRUPT = hidden("corrupt_record")
_FILE = hidden("file")


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
            for c in as_read(columns)
        ]
        problem = F.lit(f"column {missing[0]} is missing") if missing else F.lit(None)
        return frame.select(
            *selected,
            problem.cast("string").alias(_CORRUPT),
            F.col("_metadata.file_path").alias(_FILE),
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
    return frame.withColumn(_FILE, F.col("_metadata.file_path"))


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


def is_malformed(error: Exception) -> bool:
    return isinstance(error, _Malformed) or "MALFORMED_RECORD_IN_PARSING" in str(error)


@contextmanager
def sorting_out(
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
    if is_malformed(error):
        frame = parse_files(spark, source, store, columns, paths, strict=False).cache()
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
            frame = parse_files(spark, source, store, columns, [path], strict=False).cache()
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
