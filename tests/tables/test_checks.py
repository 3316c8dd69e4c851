"""A table's expectations reach Dagster as checks of its asset: declared with the table's
definitions, and evaluated on each `lake sql` commit with its counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from lake_assets.changes import dagster_reporter
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from lake_assets.tables.defs import build_defs


def test_each_commit_evaluates_the_tables_expectation_checks(
    lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dagster").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    session = LakeSession(
        lake.catalog, lake.settings, lambda: lake.spark, changed=dagster_reporter(lake.catalog)
    )
    session.sql(
        "CREATE TABLE t (id BIGINT, v INT, CONSTRAINT positive EXPECT (v > 0) ON VIOLATION "
        "DROP ROW, CONSTRAINT small EXPECT (v < 100)); INSERT INTO t VALUES (1, 5), (2, -1)"
    )
    defs = build_defs(lake.catalog, LakeSettings(lake_home=tmp_path), LakeSession)
    (check,) = defs.asset_checks or []
    assert set(check.check_keys) == {
        AssetCheckKey(AssetKey("t"), "positive"),
        AssetCheckKey(AssetKey("t"), "small"),
    }

    with DagsterInstance.get() as instance:
        (materialized,) = instance.fetch_materializations(AssetKey("t"), limit=1).records
        metadata = materialized.asset_materialization.metadata
        assert metadata["lake/expectations"].value == {"positive": [1, 1], "small": [2, 0]}
        verdicts = {}
        for name in ("positive", "small"):
            (record,) = instance.event_log_storage.get_asset_check_execution_history(
                AssetCheckKey(AssetKey("t"), name), limit=1
            )
            evaluation = record.event.dagster_event.event_specific_data
            verdicts[name] = (evaluation.passed, evaluation.metadata["failed"].value)
    assert verdicts == {"positive": (False, 1), "small": (True, 0)}
