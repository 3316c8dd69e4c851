"""A COPY whose commit adds a column by schema evolution, its `lake sql` process SIGKILLed before
and after that commit: the COPY run again leaves every row once, the new column once, in Delta's
schema and in the catalog's record, and each file's load record once."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import history
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.load_records import load_history
from lake_assets.pipes.loading import AFTER_COMMIT, BEFORE_COMMIT
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.crashes import lake_sql_killed_at
from tests.ingest_helpers import local_volume, message, put, rows

COPY = "COPY INTO t FROM VOLUME v USING JSON"
# b.json brings column city, which t lacks.
FILES = {
    "a.json": '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n',
    "b.json": '{"id": 3, "name": "c", "city": "Oslo"}\n',
}
RECOVERY = {
    BEFORE_COMMIT: "COPY: 2 files loaded (3 rows), 0 failed, 0 purged; t is at version 1",
    AFTER_COMMIT: "COPY: 0 files loaded (0 rows), 0 failed, 0 purged",
}


@pytest.fixture
def lake_home(spark: SparkSession, tmp_path: Path) -> LakeSession:
    """A lakehouse at tmp_path/lake: table t (id, name) that evolves, volume v with FILES."""
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(
        "CREATE TABLE t (id BIGINT, name STRING);"
        "ALTER TABLE t SET PROPERTIES ('schema_evolution' = 'true')"
    )
    for name, content in FILES.items():
        put(volume, name, content)
    return lake


@pytest.mark.parametrize("failpoint", [BEFORE_COMMIT, AFTER_COMMIT])
def test_a_copy_that_adds_a_column_killed_at_its_commit_recovers_exactly_once(
    spark: SparkSession, lake_home: LakeSession, failpoint: str
) -> None:
    lake = lake_home
    crashed = lake_sql_killed_at(lake.settings.lake_home, failpoint, COPY)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    location = lake.catalog.get(TableEntry, "t").location
    committed = failpoint == AFTER_COMMIT
    delta_columns = ["id", "name", "city"] if committed else ["id", "name"]
    assert spark.read.format("delta").load(location).columns == delta_columns
    # The dead process recorded nothing: the catalog still has the columns it had.
    assert [c.name for c in lake.catalog.get(TableEntry, "t").columns] == ["id", "name"]

    assert message(lake, COPY) == RECOVERY[failpoint]
    assert rows(lake, "SELECT id, name, city FROM t ORDER BY id") == [
        (1, "a", None),
        (2, "b", None),
        (3, "c", "Oslo"),
    ]
    assert spark.read.format("delta").load(location).columns == ["id", "name", "city"]
    assert [row[:2] for row in rows(lake, "DESC t")] == [
        ("id", "BIGINT"),
        ("name", "STRING"),
        ("city", "STRING"),
    ]
    entry = lake.catalog.get(TableEntry, "t")
    assert [c.name for c in entry.columns] == ["id", "name", "city"]
    assert entry.schema_change == "added column city STRING"
    # The load's one commit (version 1) has its rows and its column.
    assert (entry.version, entry.schema_version, entry.row_count) == (1, 1, 3)
    assert sorted(
        (r.file_path.rsplit("/", 1)[-1], r.status, r.rows_loaded, r.commit_version)
        for r in load_history(lake.catalog, "t")
    ) == [("a.json", "LOADED", 2, 1), ("b.json", "LOADED", 1, 1)]
    assert [
        commit.version
        for commit in history(spark, location)
        if commit.user_metadata and "lake_load" in json.loads(commit.user_metadata)
    ] == [1]
