"""MATCH_BY_COLUMN_NAME for CSV: each file read with the columns its header names, in its order,
so that files whose columns come in another order, or with one more, load by name."""

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


def read_layouts(
    spark: SparkSession,
    source: VolumeSource,
    store: VolumeStore,
    columns: tuple[Column, ...],
    paths: list[str],
    match: ColumnMatch,
) -> Layouts | None:
    """Each CSV file's columns as its header names them (a Spark job of one line per file); None
    when files are read by place, or by name already (JSON and Parquet)."""
    if match == ColumnMatch.NONE or source.file_format != "CSV":
        return None
    reader = file_reader(spark, source, store)
    return {
        path: in_file_order(load_files(reader, [path]).columns, columns, match) for path in paths
    }


def in_file_order(
    header: list[str], columns: tuple[Column, ...], match: ColumnMatch
) -> tuple[Column, ...]:
    """The table's columns in the header's order; a name the table lacks is read and dropped."""
    by_key = {match.key(column.name): column for column in columns}
    return tuple(
        by_key.get(match.key(name), Column(hidden(f"unmatched_{place}"), "STRING"))
        for place, name in enumerate(header)
    )
