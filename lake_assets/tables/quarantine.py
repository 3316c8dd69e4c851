"""A table's quarantine: the rows its DROP ROW expectations kept out, in a Delta table of their
own inside the table's folder (so that it is renamed and dropped with it), each tagged with the
record tag of the write it was dropped from. They are written before that write's commit and
shown only once a commit of the table carries the tag: a crash in between leaves rows nobody
sees, and a write is never quarantined twice. A dynamic table's quarantine holds what its
newest refresh left out (see dynamic_tables.expected): only the newest tagged commit's rows show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core import failpoints
from lake_assets.core.commits import tags
from lake_assets.core.delta import delta_ref, is_table, quote_name, sql_string
from lake_assets.core.names import hidden
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Expecting, Quarantined
from lake_assets.tables.grammar import QuarantinedRowsSource

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>): the rows are
# quarantined, the table's commit not yet made.
QUARANTINED = "expectations.quarantined"
# The quarantine's own columns after the table's.
EXPECTATION, TAG, AT = hidden("expectation"), hidden("tag"), hidden("quarantined_at")
_FOLDER = "_lake_quarantine"  # Delta and VACUUM leave a table's "_" folders alone


def quarantine_location(table: Expecting) -> str:
    return f"{table.location.rstrip('/')}/{_FOLDER}"


def quarantine(table: Expecting, rows: DataFrame, expectation: SparkColumn, tag: str) -> None:
    """Keep `rows` (the table's columns) aside for the write tagged `tag`, each with the name of
    the first expectation it failed; one that shows its newest write's only lets older ones go."""
    location = quarantine_location(table)
    if table.QUARANTINED == Quarantined.NEWEST_WRITE and is_table(rows.sparkSession, location):
        newest = ", ".join(map(sql_string, _newest(tags(None, table.location)))) or "NULL"
        rows.sparkSession.sql(
            f"DELETE FROM {delta_ref(location)} WHERE {TAG} IS NULL OR {TAG} NOT IN ({newest})"
        ).collect()
    kept = rows.select(
        "*",
        expectation.alias(EXPECTATION),
        F.lit(tag).alias(TAG),
        F.current_timestamp().alias(AT),
    )
    kept.write.format("delta").mode("append").option("mergeSchema", "true").save(location)
    failpoints.reached(QUARANTINED)


def read_quarantined_rows(session: Context, source: QuarantinedRowsSource) -> DataFrame:
    """The table's columns, the expectation each row failed, the version of the commit it was
    dropped from and when; rows of writes that never committed are not shown."""
    spark, table = session.spark, _expecting(session, source.table)
    location = quarantine_location(table)
    if not is_table(spark, location):
        return _empty(spark, table)
    committed = tags(spark, table.location)
    if table.QUARANTINED == Quarantined.NEWEST_WRITE:
        committed = _newest(committed)
    versions = spark.createDataFrame(
        list(committed.items()), f"{TAG} STRING, commit_version BIGINT"
    )
    rows = spark.read.format("delta").load(location).join(versions, TAG)
    present = set(rows.columns)
    return rows.select(
        *(
            F.col(quote_name(c.name)) if c.name in present else F.lit(None).cast(c.type)
            for c in table.columns
        ),
        F.col(EXPECTATION).alias("expectation"),
        "commit_version",
        F.col(AT).alias("quarantined_at"),
    )


def _expecting(session: Context, name: str) -> Expecting:
    """A table or dynamic table (each may have expectations), or the error that says what is."""
    found = session.catalog.stored(name)
    if not isinstance(found, Expecting):
        raise found.mistaken_for(TableEntry)
    return found


def _newest(committed: dict[str, int]) -> dict[str, int]:
    """Of the tags committed (with their versions), the newest commit's."""
    if not committed:
        return {}
    newest = max(committed, key=committed.__getitem__)
    return {newest: committed[newest]}


def _empty(spark: SparkSession, table: Expecting) -> DataFrame:
    columns = ", ".join(f"{quote_name(c.name)} {c.type}" for c in table.columns)
    schema = f"{columns}, expectation STRING, commit_version BIGINT, quarantined_at TIMESTAMP"
    return spark.createDataFrame([], schema)
