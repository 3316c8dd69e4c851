"""What the stream tests share: table t, the consumer MERGE, and how they read streams back."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lake_assets.session import LakeSession

TABLE = "CREATE TABLE t (id INT, name VARCHAR, age INT)"
METADATA = ["__change_type", "__commit_version", "__commit_timestamp"]
CONSUMER_MERGE = (
    "MERGE INTO {target} target USING {stream} source_stream ON target.id = source_stream.id "
    "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' THEN update set target.age = "
    "source_stream.age WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
    "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' THEN INSERT VALUES "
    "(source_stream.id, source_stream.name, source_stream.age)"
)


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    """A query's rows, sorted."""
    (result,) = lake.sql(sql)
    return sorted(tuple(row) for row in result.rows)


def message(lake: LakeSession, sql: str) -> str:
    (result,) = lake.sql(sql)
    assert result.message is not None
    return result.message


def changes(lake: LakeSession, stream: str) -> list[tuple]:
    """A stream's rows without their commit times, sorted: (change type, version, columns…)."""
    (result,) = lake.sql(f"SELECT * FROM {stream}")
    assert result.columns[:3] == METADATA
    return sorted((row[0], row[1], *row[3:]) for row in result.rows)


def desc(lake: LakeSession, stream: str) -> dict[str, Any]:
    (result,) = lake.sql(f"DESC STREAM {stream}")
    return dict(result.rows)


def history(lake: LakeSession, table: str) -> dict[int, tuple[datetime, str]]:
    """DESC HISTORY as version → (commit time, operation)."""
    (result,) = lake.sql(f"DESC HISTORY {table}")
    return {row[0]: (row[1], row[2]) for row in result.rows}


def latest(lake: LakeSession, table: str) -> int:
    return max(history(lake, table))


def tracked(lake: LakeSession, rows_sql: str) -> int:
    """Table t, stream s (turning change tracking on), then `rows_sql`; the version it wrote."""
    lake.sql(f"{TABLE}; CREATE TABLE STREAM s ON TABLE t; {rows_sql}")
    return latest(lake, "t")
