"""Small Spark SQL helpers for path-addressed Delta tables."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

COMMIT_TAG_CONF = "spark.databricks.delta.commitInfo.userMetadata"

# Delta's operationMetrics keys for rows inserted, updated and deleted, per commit operation.
_ROW_METRICS = {
    "WRITE": ("numOutputRows", None, None),
    "CREATE TABLE AS SELECT": ("numOutputRows", None, None),
    "UPDATE": (None, "numUpdatedRows", None),
    "DELETE": (None, None, "numDeletedRows"),
    "MERGE": ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"),
}


def delta_ref(location: str) -> str:
    """A Spark SQL reference to the Delta table at `location`."""
    return "delta.`" + location.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def history(spark: SparkSession, location: str, limit: int | None = None) -> list[Any]:
    """Commit history, newest first."""
    suffix = f" LIMIT {int(limit)}" if limit else ""
    return spark.sql(f"DESCRIBE HISTORY {delta_ref(location)}{suffix}").collect()


def row_count(spark: SparkSession, location: str, version: int) -> int:
    """Rows at one commit version (Delta answers COUNT(*) from file statistics)."""
    return spark.sql(
        f"SELECT COUNT(*) FROM {delta_ref(location)} VERSION AS OF {int(version)}"
    ).first()[0]


def row_changes(operation: str, metrics: dict[str, str] | None) -> tuple[int, int, int] | None:
    """Rows (inserted, updated, deleted) by one commit, or None when its metrics do not say."""
    keys = _ROW_METRICS.get(operation)
    metrics = metrics or {}
    if keys is None or any(key is not None and key not in metrics for key in keys):
        return None
    inserted, updated, deleted = (int(metrics[key]) if key else 0 for key in keys)
    return inserted, updated, deleted
