"""Columns a load's files bring that its table lacks: with the table's `schema_evolution` they are
added to the table in the load's own commit; with a `rescued_data_column` their values are kept
there as JSON text; otherwise they are not loaded (as Snowflake's MATCH_BY_COLUMN_NAME leaves
them). Parquet and JSON files name their columns and types; a CSV file read by name names its
columns in its header, and its new ones are STRING (CSV carries no types). Only a table that
evolves or rescues pays the read that finds them (one Spark job over the batch; for CSV, the
headers the load reads anyway)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce
from operator import or_

from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField

from lake_assets.core.delta import quote_name
from lake_assets.core.entries import Column
from lake_assets.core.names import HIDDEN_PREFIX
from lake_assets.pipes.diagnose import unreadable
from lake_assets.pipes.headers import Headers
from lake_assets.sql.types import type_text
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.files import file_reader, load_files
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import VolumeStore

# The column Spark's JSON inference adds for lines that are not JSON (not a column of the file).
_SPARK_CORRUPT_RECORD = "_corrupt_record"
# What no added column's name holds: what Delta refuses (without column mapping), and the
# backtick that quotes names in SQL. A file's field so named is rescued, never added.
_NOT_ADDED = frozenset(" ,;{}()\n\t=`")
# The formats whose files name their columns with their types, so a column the table lacks can
# be told (CSV names them only in a header read by name: see plan_evolution's `headers`).
NAMED_FORMATS = ("PARQUET", "JSON")


@dataclass(frozen=True)
class Evolution:
    """What one load does with the columns its files bring: `added` to the table, or `rescued`
    into the table's `rescue_column`, which no file holds (NULL for a record with nothing to
    rescue)."""

    added: tuple[Column, ...] = ()
    rescued: tuple[Column, ...] = ()
    rescue_column: str | None = None

    def source(self, source: VolumeSource) -> VolumeSource:
        """Parquet files read with every file's columns, not one file's, when some are new."""
        if (self.added or self.rescued) and source.file_format == "PARQUET":
            return replace(source, options={**source.options, "mergeSchema": "true"})
        return source

    def read_columns(self, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        """The columns the files are read with: the table's (not the rescued-data column, which
        no file holds) and the new ones."""
        kept = tuple(c for c in columns if c.name != self.rescue_column)
        return kept + self.added + self.rescued

    def table_columns(self, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        """The table's columns once the load commits."""
        return columns + self.added

    def rows(self, rows: DataFrame) -> DataFrame:
        """The rows with the rescued values as JSON text (NULL when a record had none)."""
        if self.rescue_column is None:
            return rows
        if not self.rescued:
            return rows.withColumn(self.rescue_column, F.lit(None).cast("string"))
        values = [F.col(quote_name(column.name)) for column in self.rescued]
        anything = reduce(or_, [value.isNotNull() for value in values])
        return rows.withColumn(self.rescue_column, F.when(anything, F.to_json(F.struct(*values))))

    def written(self, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        """The columns the commit takes from the rows: those read, and the rescued data."""
        if self.rescue_column is None:
            return columns
        return (*columns, Column(self.rescue_column, "STRING"))

    def describe(self) -> str:
        """The columns added, as the table's schema change and its event say."""
        return (
            "added column"
            + ("s " if len(self.added) > 1 else " ")
            + ", ".join(f"{c.name} {c.type}" for c in self.added)
        )


def plan_evolution(
    spark: SparkSession,
    table: TableEntry,
    source: VolumeSource,
    store: VolumeStore,
    paths: list[str],
    columns: tuple[Column, ...],
    headers: Headers | None = None,
) -> Evolution:
    """The columns the batch's files bring beyond `columns`, and what the table does with them.
    A name is new when no column has it in any case, whatever MATCH_BY_COLUMN_NAME says: Delta
    names columns in any case, so a table cannot hold both `Amount` and `amount`. A new column
    keeps the first file's spelling of it, as Parquet and JSON columns do."""
    rescue = table.rescued_data_column
    evolves = table.schema_evolution
    if not (evolves or rescue) or source.columns:
        return Evolution(rescue_column=rescue)
    if headers is not None:  # CSV read by name: its header's names, as text
        brought = [
            Column(name, "STRING")
            for names in headers.values()
            for place, name in enumerate(names)
            if name != f"_c{place}"  # Spark's name for an empty header field: no name at all
        ]
    elif source.file_format in NAMED_FORMATS:
        reader = file_reader(spark, source, store)
        if source.file_format == "PARQUET":
            reader = reader.option("mergeSchema", "true")
        brought = [Column(f.name, type_text(f.dataType)) for f in _fields(reader, paths)]
    else:
        return Evolution(rescue_column=rescue)
    known = {column.name.lower() for column in columns}
    new: dict[str, Column] = {}
    for column in brought:
        name = column.name
        if name.lower() not in known and name != _SPARK_CORRUPT_RECORD and _ours_to_take(name):
            new.setdefault(name.lower(), column)
    found = tuple(new.values())
    addable = tuple(c for c in found if evolves and not _NOT_ADDED & set(c.name))
    rescued = tuple(c for c in found if c not in addable) if rescue else ()
    return Evolution(added=addable, rescued=rescued, rescue_column=rescue)


def _ours_to_take(name: str) -> bool:
    """A file's name is never the lakehouse's own (its hidden columns), however it is spelt."""
    return bool(name.strip()) and not name.lower().startswith(HIDDEN_PREFIX)


def _fields(reader: DataFrameReader, paths: list[str]) -> list[StructField]:
    """The columns of the files, read together; file by file when one does not read (it fails
    alone in the load, with its own message)."""
    try:
        return list(load_files(reader, paths).schema.fields)
    except Exception as error:
        if unreadable(error) is None:
            raise
    fields: list[StructField] = []
    for path in paths:
        try:
            fields += load_files(reader, [path]).schema.fields
        except Exception as error:
            if unreadable(error) is None:
                raise
    return fields
