"""The status table: a real Delta table, shared by exports, holding one row per
export run, so that an export starts where the one before it left off instead of scanning the
history again, and a range exported in full is not read twice."""

from __future__ import annotations

from dataclasses import asdict, astuple, dataclass, fields
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaProtocolError
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import delta_ref, history, local_table, row_changes, sql_string
from lake_assets.core.entries import Column
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.writes import record_commit_state
from lake_assets.tables.entry import TableEntry


@dataclass(frozen=True)
class Status:
    """One export run of [range_start, range_end): it scanned the source's versions from
    `first_version` and covered them up to `last_version`; `complete` when no later commit can
    fall in the range any more (one at or after its end was seen, or its end has passed)."""

    export: str
    source: str
    range_start: int
    range_end: int
    first_version: int
    last_version: int
    complete: bool
    records: int
    versions_read: int
    exported_at: datetime


_TYPES = {"int": "BIGINT", "str": "STRING", "bool": "BOOLEAN", "datetime": "TIMESTAMP"}
# The table's columns: Status's fields, in order.
COLUMNS = tuple(Column(f.name, _TYPES[str(f.type)]) for f in fields(Status))
# The same as delta-rs writes them (a Delta TIMESTAMP is in UTC).
_ARROW = {
    "BIGINT": pa.int64(),
    "STRING": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}
_ARROW_SCHEMA = pa.schema([(column.name, _ARROW[column.type]) for column in COLUMNS])


def runs(spark: SparkSession, table: TableEntry, export: str, source: str) -> list[Status]:
    """The export's runs on `source`, oldest first; a local table is read with delta-rs, in
    milliseconds rather than a Spark job's second, as every export reads it first."""
    folder = local_table(table.location)
    if folder is None:
        rows = spark.sql(
            f"SELECT * FROM {delta_ref(table.location)} WHERE export = {sql_string(export)} "
            f"AND source = {sql_string(source)}"
        ).collect()
        found = [Status(**{c.name: row[c.name] for c in COLUMNS}) for row in rows]
    else:
        matching = DeltaTable(str(folder)).to_pyarrow_table(
            filters=[("export", "=", export), ("source", "=", source)]
        )
        found = [_status(row) for row in matching.to_pylist()]
    return sorted(found, key=lambda run: run.exported_at)


def _status(row: dict[str, Any]) -> Status:
    """A row as delta-rs reads it (timestamps in UTC) as Spark would (naive UTC)."""
    return Status(**{**row, "exported_at": row["exported_at"].replace(tzinfo=None)})


def record(spark: SparkSession, catalog: Catalog, table: TableEntry, status: Status) -> None:
    """Append the run's row, and the table's new state to the catalog. A local table takes it
    from delta-rs, in milliseconds rather than a Spark job's quarter second, unless a table
    feature it cannot write was turned on."""
    folder = local_table(table.location)
    if folder is not None:
        row = {**asdict(status), "exported_at": status.exported_at.replace(tzinfo=UTC)}
        try:
            write_deltalake(str(folder), pa.Table.from_pylist([row], _ARROW_SCHEMA), mode="append")
        except DeltaProtocolError:
            pass
        else:
            version = DeltaTable(str(folder)).version()
            record_commit_state(spark, catalog, table, version, (1, 0, 0))
            return
    schema = ", ".join(f"{c.name} {c.type}" for c in COLUMNS)
    spark.createDataFrame([astuple(status)], schema).write.format("delta").mode("append").save(
        table.location
    )
    _settled(spark, catalog, table)


def forget(spark: SparkSession, catalog: Catalog, table: TableEntry, export: str) -> None:
    """DROP CHANGELOG EXPORT: a new export of that name starts afresh."""
    ensure_log_intact(table)
    spark.sql(f"DELETE FROM {delta_ref(table.location)} WHERE export = {sql_string(export)}")
    _settled(spark, catalog, table)


def _settled(spark: SparkSession, catalog: Catalog, table: TableEntry) -> None:
    """The table's version and row count after a write, in the catalog (from the commit's
    metrics when it follows the version the catalog knows)."""
    (commit,) = history(spark, table.location, 1)
    changes = row_changes(commit.operation or "", commit.operation_metrics)
    record_commit_state(spark, catalog, table, commit.version, changes)


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
