"""TARGET_LAG on real Delta tables, without the daemon: the lag a table has (now minus the oldest
base commit it does not reflect), what DESC and the refresh history say of it, the lag sensor's
decisions on an instance of its own, the assets' freshness policies, and DOWNSTREAM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from dagster import AssetKey, DagsterInstance, RunRequest, build_sensor_context

from lake_assets.core.errors import LakeError
from lake_assets.definitions import build_definitions
from lake_assets.dynamic_tables.defs import TRIGGER_TAG
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.freshness import lag_sensor
from lake_assets.dynamic_tables.lags import current_lag
from lake_assets.session import LakeSession
from tests.dynamic_tables.refresh_helpers import history_of


def describe(lake: LakeSession, name: str) -> dict:
    (result,) = lake.sql(f"DESC DYNAMIC TABLE {name}")
    return dict(result.rows)


def test_a_table_falls_behind_from_its_bases_oldest_unreflected_commit(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE src (k STRING, v INT); INSERT INTO src VALUES ('x', 1);"
        "CREATE DYNAMIC TABLE up TARGET_LAG = '1 minute' AS SELECT k, v FROM src;"
        "CREATE DYNAMIC TABLE top TARGET_LAG = '10 minutes' AS SELECT k, v * 2 AS w FROM up"
    )
    catalog = lake.catalog
    top = catalog.get(DynamicTableEntry, "top")
    now = datetime.now(UTC)
    assert current_lag(catalog, top, now) == 0.0
    lake.sql("INSERT INTO src VALUES ('y', 2)")
    later = now + timedelta(minutes=3)
    # `top` reads `src` through `up`: both fall behind from that INSERT's commit.
    lag = current_lag(catalog, top, later)
    assert 170 < lag < 190, lag
    assert current_lag(catalog, catalog.get(DynamicTableEntry, "up"), later) == lag
    shown = describe(lake, "top")
    assert shown["target_lag"] == "10 minutes"
    assert float(shown["lag"].removesuffix(" s")) < 60

    (refreshed,) = lake.sql("REFRESH DYNAMIC TABLE top")
    assert refreshed.message.startswith("REFRESH INCREMENTAL"), refreshed.message
    assert current_lag(catalog, catalog.get(DynamicTableEntry, "top"), later) == 0.0
    (newest, *_) = history_of(lake, "top")
    assert 0 <= newest["lag_seconds"] < 60  # the INSERT's commit to this refresh's
    (lake_up, *_) = history_of(lake, "up")
    assert lake_up["refresh_trigger"] == "DOWNSTREAM"


def test_the_lag_sensor_refreshes_at_half_the_target_and_reports_a_current_table(
    lake: LakeSession,
) -> None:
    lake.sql(
        "CREATE TABLE src (k STRING, v INT); INSERT INTO src VALUES ('x', 1);"
        "CREATE DYNAMIC TABLE d TARGET_LAG = '10 minutes' AS SELECT k, v FROM src"
    )
    start = datetime.now(UTC)
    clock = [start]
    sensor = lag_sensor("lags", lake.catalog, ["d"], {TRIGGER_TAG: "SCHEDULED"}, lambda: clock[0])
    with DagsterInstance.ephemeral() as instance:

        def look() -> list[RunRequest]:
            result = sensor.evaluate_tick(build_sensor_context(instance=instance))
            return list(result.run_requests or [])

        # Current, and never materialized in this instance: reported as current.
        assert look() == []
        event = instance.get_latest_materialization_event(AssetKey("d"))
        assert event is not None
        assert look() == []  # reported a moment ago: not again
        lake.sql("INSERT INTO src VALUES ('y', 2)")
        clock[0] = start + timedelta(minutes=4)
        assert look() == []  # behind by ~4 of 10 minutes
        clock[0] = start + timedelta(minutes=6)
        (request,) = look()
        assert request.asset_selection == [AssetKey("d")]
        assert request.tags[TRIGGER_TAG] == "SCHEDULED"
        assert look()[0].run_key == request.run_key  # the same state: Dagster runs it once


def test_assets_with_a_target_lag_carry_a_freshness_policy_and_no_eager_condition(
    lake: LakeSession,
) -> None:
    lake.sql(
        "CREATE TABLE src (k STRING, v INT); INSERT INTO src VALUES ('x', 1);"
        "CREATE DYNAMIC TABLE cleaned TARGET_LAG = '1 hour' AS SELECT k, v FROM src;"
        "CREATE DYNAMIC TABLE eager AS SELECT k FROM src;"
        "CREATE DYNAMIC TABLE summary TARGET_LAG = '5 minutes' AS "
        "SELECT k, SUM(v) AS total FROM cleaned GROUP BY k"
    )
    with pytest.raises(LakeError, match="no dynamic table reads summary, so it would never"):
        lake.sql("ALTER DYNAMIC TABLE summary SET TARGET_LAG = DOWNSTREAM")
    with pytest.raises(LakeError, match="no dynamic table reads other"):
        lake.sql("CREATE DYNAMIC TABLE other TARGET_LAG = DOWNSTREAM AS SELECT k FROM src")
    (altered,) = lake.sql("ALTER DYNAMIC TABLE cleaned SET TARGET_LAG = DOWNSTREAM")
    assert altered.message == "dynamic table cleaned has TARGET_LAG = DOWNSTREAM"
    with pytest.raises(LakeError, match="changes only when a table reading it refreshes"):
        lake.sql("CREATE DYNAMIC TABLE stuck AS SELECT k FROM cleaned")
    defs = build_definitions(lake.settings)
    graph = defs.resolve_asset_graph()
    summary, cleaned = graph.get(AssetKey("summary")), graph.get(AssetKey("cleaned"))
    assert summary.freshness_policy is not None
    assert summary.automation_condition is None
    assert summary.metadata["lake/target_lag"] == "5 minutes"
    assert cleaned.freshness_policy is None  # DOWNSTREAM: refreshed with summary
    assert cleaned.automation_condition is None
    assert graph.get(AssetKey("eager")).automation_condition is not None
    sensors = {sensor.name for sensor in defs.sensors or []}
    assert "lake_target_lags" in sensors
    (shown,) = lake.sql("SHOW DYNAMIC TABLES")
    lags = {row[0]: row[3] for row in shown.rows}
    assert lags == {"cleaned": "DOWNSTREAM", "eager": None, "summary": "5 minutes"}
