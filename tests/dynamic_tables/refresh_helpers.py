"""What the refresh tests read back: rows, columns, a refresh history, a table's Delta version."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lake_assets.core.delta import history
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.session import LakeSession


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def columns(lake: LakeSession, sql: str) -> list[str]:
    (result,) = lake.sql(sql)
    return result.columns


def history_of(lake: LakeSession, name: str) -> list[dict]:
    (result,) = lake.sql(f"SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = '{name}'")
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def version(spark: SparkSession, lake: LakeSession, name: str) -> int:
    return history(spark, lake.catalog.get(DynamicTableEntry, name).location, 1)[0].version
