"""MATCH_BY_COLUMN_NAME for CSV: each file read with the columns its header names, in its order,
so that files whose columns come in another order, or with one more, load by name; for JSON in
any case, each file read with its keys as it spells them."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lake_assets.core.entries import Column
from lake_assets.core.names import hidden
from lake_assets.pipes.copy_options import ColumnMatch
from lake_assets.volumes.files import file_reader, load_files
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import VolumeStore

# The columns each file is read with, by its path.
Layouts = dict[str, tuple[Column, ...]]
# The names each CSV file's header gives, by its path.
Headers = dict[str, list[str]]


def csv_headers(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    paths: list[str],
    match: ColumnMatch,
) -> Headers | None:
    """Each CSV file's header names when the COPY matches by name, read once for the load's
    evolution and layouts alike: Spark's schema of a header without inference reads one line
    (a Spark job per file), never the whole file; None for other COPYs."""
    if match == ColumnMatch.NONE or source.file_format != "CSV":
        return None
    reader = file_reader(spark, source, store)
    return {path: load_files(reader, [path]).columns for path in paths}


def read_layouts(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    match: ColumnMatch,
    headers: Headers | None = None,
) -> Layouts | None:
    """Each CSV file's columns as its header names them (`headers`, when read already), or
    each JSON file's keys matched in any case (a Spark job reading the file's keys); None when
    files are read by place, or by name already (JSON by exact names, Parquet)."""
    if source.file_format == "JSON" and match == ColumnMatch.CASE_INSENSITIVE:
        reader = file_reader(spark, source, store)
        return {path: as_spelt(load_files(reader, [path]).columns, columns) for path in paths}
    if headers is None:
        headers = csv_headers(spark, source, store, paths, match)
    if headers is None:
        return None
    return {path: in_file_order(headers[path], columns, match) for path in paths}


def as_spelt(keys: list[str], columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """The table's columns named as the file's keys spell them (the first key of each in any
    case; a column no key names keeps its name, and reads NULL)."""
    spelt: dict[str, str] = {}
    for key in keys:
        spelt.setdefault(key.lower(), key)
    return tuple(Column(spelt.get(c.name.lower(), c.name), c.type) for c in columns)


def in_file_order(
    header: list[str], columns: tuple[Column, ...], match: ColumnMatch
) -> tuple[Column, ...]:
    """The table's columns in the header's order; a name the table lacks is read and dropped."""
    by_key = {match.key(column.name): column for column in columns}
    return tuple(
        by_key.get(match.key(name), Column(hidden(f"unmatched_{place}"), "STRING"))
        for place, name in enumerate(header)
    )
