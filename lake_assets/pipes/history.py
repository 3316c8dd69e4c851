"""load_history('t') and rejected_rows('t') as relations: the table's load records within the
retention window, and the records its loads rejected."""

from __future__ import annotations

from dataclasses import astuple
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.grammar import LoadHistorySource, RejectedRowsSource
from lake_assets.pipes.load_records import load_history, rejected_rows
from lake_assets.tables.entry import TableEntry

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

SCHEMA = (
    "file_path STRING, last_copy_time TIMESTAMP, file_size BIGINT, status STRING, "
    "rows_loaded BIGINT, first_error_message STRING, pipe_name STRING, commit_version BIGINT, "
    "rows_rejected BIGINT"
)
REJECTED_SCHEMA = (
    "file_path STRING, row_number BIGINT, column_name STRING, error STRING, raw_record STRING, "
    "pipe_name STRING, commit_version BIGINT"
)


def read_load_history(session: Context, source: LoadHistorySource) -> DataFrame:
    return load_history_frame(session.spark, session.catalog, session.settings, source.table)


def load_history_frame(
    spark: SparkSession, catalog: Catalog, settings: LakeSettings, table: str
) -> DataFrame:
    catalog.get(TableEntry, table)
    since = datetime.now(UTC) - timedelta(days=settings.load_history_days)
    records = load_history(catalog, table, since.isoformat(timespec="milliseconds"))
    return spark.createDataFrame(
        [
            (
                r.file_path,
                datetime.fromisoformat(r.last_copy_time).replace(tzinfo=None),
                r.file_size,
                str(r.status),
                r.rows_loaded,
                r.first_error_message,
                r.pipe_name,
                r.commit_version,
                r.rows_rejected,
            )
            for r in records
        ],
        SCHEMA,
    )


def read_rejected_rows(session: Context, source: RejectedRowsSource) -> DataFrame:
    session.catalog.get(TableEntry, source.table)
    since = datetime.now(UTC) - timedelta(days=session.settings.load_history_days)
    rows = rejected_rows(session.catalog, source.table, since.isoformat(timespec="milliseconds"))
    return session.spark.createDataFrame([astuple(row) for row in rows], REJECTED_SCHEMA)
