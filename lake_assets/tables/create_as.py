"""CREATE TABLE … AS SELECT: Delta's own CTAS, one commit holding the query's rows, then the
catalog's entry with the columns that commit made. A crash between the two leaves only an unnamed
folder in the warehouse: the table does not exist, and the statement can run again."""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING

from lake_assets.core.commits import STATEMENT_MARKER, committing, new_record
from lake_assets.core.delta import delta_ref, row_count, sql_string
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import name_taken
from lake_assets.core.results import Result
from lake_assets.sql.types import type_text
from lake_assets.tables.engine import remove_files
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.grammar import CreateTableAs

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

_OPERATION = "CREATE TABLE AS SELECT"
# A column name Delta takes without column mapping (no space, comma, parenthesis …).
_PLAIN_NAME = re.compile(r"[^ ,;{}()\n\t=]+")


def create_table_as(session: Context, stmt: CreateTableAs) -> Result:
    catalog = session.catalog
    if taken := name_taken(session, TableEntry, stmt.name, stmt.if_not_exists):
        return taken
    bound = session.bind(stmt.query)  # before Spark: unknown names fail without a JVM
    if bound.reads:
        raise LakeError(
            f"CREATE TABLE {stmt.name} AS SELECT reads a stream, whose offset only a write to "
            "an existing table moves",
            f"create the table first, then INSERT INTO {stmt.name} SELECT … FROM the stream",
        )
    spark = session.spark
    for field in spark.sql(bound.sql).schema.fields:  # analysed only: no Spark job
        if not _PLAIN_NAME.fullmatch(field.name):
            raise LakeError(
                f"the query's column {field.name} needs a name to be a column of table {stmt.name}",
                "name it with AS, e.g. COUNT(*) AS orders",
            )
    location = session.warehouse_path(f"{stmt.name}-{uuid.uuid4().hex[:12]}")
    described = f" COMMENT {sql_string(stmt.comment)}" if stmt.comment else ""
    with committing(spark, new_record(STATEMENT_MARKER, operation=_OPERATION)):
        spark.sql(f"CREATE TABLE {delta_ref(location)} USING delta{described} AS {bound.sql}")
    schema = spark.read.format("delta").load(location).schema
    columns = tuple(Column(f.name, type_text(f.dataType)) for f in schema.fields)
    try:
        entry = catalog.add(TableEntry(stmt.name, location, columns, stmt.comment))
    except LakeError:
        remove_files(location)
        raise
    rows = row_count(spark, location, 0)
    catalog.record_table_state(entry, 0, rows)
    session.committed(stmt.name)
    return Result.status(f"created table {stmt.name} with {rows} rows")
