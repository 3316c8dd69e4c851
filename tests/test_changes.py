"""`lake sql` changes reach the Dagster instance as materializations (automation sees them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from lake_assets.automation import DATA_VERSION_TAG
from lake_assets.changes import dagster_reporter
from lake_assets.exports.entry import DEFAULT_STATUS_TABLE
from lake_assets.session import LakeSession


def materializations(key: str) -> list[dict]:
    with DagsterInstance.get() as instance:
        records = instance.fetch_materializations(AssetKey(key), limit=10).records
    return [
        {name: value.value for name, value in r.asset_materialization.metadata.items()}
        for r in records
    ]


def test_committed_sql_changes_are_reported_and_nothing_else(
    lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert dagster_reporter(lake.catalog) is None
    (tmp_path / "dagster").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    session = LakeSession(
        lake.catalog, lake.settings, lambda: lake.spark, changed=dagster_reporter(lake.catalog)
    )

    session.sql(
        "CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1), ('b', 2);"
        "CREATE DYNAMIC TABLE s AS SELECT k, SUM(v) AS total FROM t GROUP BY k;"
        "REFRESH DYNAMIC TABLE s"
    )
    (inserted,) = materializations("t")
    schema = inserted.pop("dagster/column_schema")
    assert inserted == {"lake/changed_by": "lake sql", "lake/version": 1, "dagster/row_count": 2}
    assert [(column.name, column.type) for column in schema.columns] == [
        ("k", "STRING"),
        ("v", "INT"),
    ]
    # CREATE filled it (its first refresh, version 1); the REFRESH found no change.
    assert [m["lake/version"] for m in materializations("s")] == [1]
    with DagsterInstance.get() as instance:
        (created,) = instance.fetch_materializations(AssetKey("s"), limit=1).records
        assert created.asset_materialization.tags[DATA_VERSION_TAG] == "1"

    session.sql("UPDATE t SET v = 5 WHERE k = 'a'; REFRESH DYNAMIC TABLE s")
    assert [m["lake/version"] for m in materializations("t")] == [3, 1]  # 2: change tracking on
    refreshed, _ = materializations("s")
    assert refreshed["dagster/row_count"] == 2

    session.sql("ALTER TABLE t ADD COLUMN note STRING")
    altered = materializations("t")[0]
    assert altered["lake/schema_change"] == "added column note STRING"
    assert [column.name for column in altered["dagster/column_schema"].columns] == [
        "k",
        "v",
        "note",
    ]


def test_an_export_into_a_table_is_an_event_of_that_table(
    lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dagster").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    session = LakeSession(
        lake.catalog, lake.settings, lambda: lake.spark, changed=dagster_reporter(lake.catalog)
    )
    session.sql(
        "CREATE TABLE src (k INT, a STRING, PRIMARY KEY (k));"
        "ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');"
        "INSERT INTO src VALUES (1, 'x'), (2, 'y');"
        "CREATE CHANGELOG EXPORT e FROM TABLE src TO TABLE log"
    )
    assert materializations("log") == []
    session.sql(
        "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 0, END_TIMESTAMP_MILLIS => 9999999999999)"
    )
    (exported,) = materializations("log")
    assert exported["dagster/row_count"] == 2  # a record per value column (a) of each new row
    # The run's row in the exports' status table is a commit of that table too, and so is
    # dropping the export, which deletes its rows there.
    assert [m["dagster/row_count"] for m in materializations(DEFAULT_STATUS_TABLE)] == [1]
    session.sql("DROP CHANGELOG EXPORT e")
    assert [m["dagster/row_count"] for m in materializations(DEFAULT_STATUS_TABLE)] == [0, 1]
