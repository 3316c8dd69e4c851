"""Dynamic tables in Dagster: an asset per dynamic table that depends on its sources, refreshes
through the Spark resource, and is requested by the automation sensor when a source changes and
by the intervals sensor on its REFRESH INTERVAL."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    DefaultSensorStatus,
    EvaluateAutomationConditionsResult,
    SensorResult,
    build_sensor_context,
    evaluate_automation_conditions,
)

from lake_assets.automation import DATA_VERSION_TAG
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import minimum_interval
from lake_assets.definitions import build_definitions
from lake_assets.dynamic_tables.defs import (
    AUTOMATION_INTERVAL_SECONDS,
    AUTOMATION_SENSOR,
    DYNAMIC_TABLES_GROUP,
    TRIGGER_TAG,
)
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.kind import INTERVALS_SENSOR
from lake_assets.dynamic_tables.refreshes import REFRESHES
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry

SUMMARY = (
    "CREATE DYNAMIC TABLE summary REFRESH INTERVAL 2 MINUTE AS "
    "SELECT k, COUNT(*) AS n, SUM(v) AS total FROM t GROUP BY k"
)


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def test_a_refresh_interval_is_requested_by_the_intervals_sensor_as_scheduled(
    tmp_path: Path, instance: DagsterInstance
) -> None:
    """Written to the catalog without Spark: `hourly` was created 90 minutes ago, so its first
    interval has passed (its runs are due at created_at + k hours, see tests/test_automation.py);
    `plain` has no interval and is left to the automation."""
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(TableEntry("t", str(tmp_path / "t"), (Column("k", "STRING"),)))
    created = datetime.now(UTC) - timedelta(minutes=90)
    for name, seconds in (("hourly", 3600), ("plain", None)):
        catalog.add(
            DynamicTableEntry(
                name,
                str(tmp_path / name),
                (Column("k", "STRING"),),
                query="SELECT k FROM t",
                sources=("t",),
                refresh_interval_seconds=seconds,
                created_at=created.isoformat(timespec="milliseconds"),
            )
        )
    defs = build_definitions(LakeSettings(lake_home=tmp_path))
    sensor = defs.resolve_sensor_def(INTERVALS_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == minimum_interval(AUTOMATION_INTERVAL_SECONDS)
    assert sensor.job.selection.resolve(defs.resolve_asset_graph()) == {AssetKey("hourly")}
    assert defs.schedules == []  # no cron stands for an interval any more

    result = sensor(build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(result, SensorResult)
    (request,) = result.run_requests
    assert request.asset_selection == [AssetKey("hourly")]
    assert request.tags == {TRIGGER_TAG: "SCHEDULED"}


def test_a_dynamic_table_is_an_asset_refreshed_by_dagster(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1), ('b', 2); {SUMMARY}"
    )
    defs = build_definitions(lake.settings)
    graph = defs.resolve_asset_graph()
    node = graph.get(AssetKey("summary"))
    assert node.parent_keys == {AssetKey("t")}
    assert node.group_name == DYNAMIC_TABLES_GROUP
    assert node.automation_condition is not None
    sensor = defs.resolve_sensor_def(AUTOMATION_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == minimum_interval(AUTOMATION_INTERVAL_SECONDS)

    lake.sql("INSERT INTO t VALUES ('a', 10), ('c', 5); DELETE FROM t WHERE k = 'b'")
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, asset_selection=[AssetKey("summary")])
    assert result.success
    (event,) = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert metadata["refresh_mode"] == "INCREMENTAL"
    assert metadata["refresh_trigger"] == "MANUAL"
    assert (metadata["rows_inserted"], metadata["rows_deleted"]) == (2, 2)
    assert metadata["dagster/row_count"] == 2
    # Its data version is its Delta version (1: CREATE's refresh, 2: this one).
    assert (
        event.materialization.tags["dagster/data_version"] == str(metadata["lake/version"]) == "2"
    )
    (rows,) = lake.sql("SELECT k, n, total FROM summary ORDER BY k")
    assert list(rows.rows) == [("a", 2, 11), ("c", 1, 5)]
    newest = REFRESHES.newest_first(lake.catalog, "summary")
    assert [(r.refresh_mode, r.refresh_trigger) for r in newest][:2] in (
        [("INCREMENTAL", "MANUAL"), ("FULL", "CREATION")],
        [("FULL", "CREATION"), ("INCREMENTAL", "MANUAL")],
    )

    # Nothing changed: NO_DATA is recorded and materializes the same data version, so the table
    # is current with its sources and what reads it sees nothing new.
    again = job.execute_in_process(instance=instance, asset_selection=[AssetKey("summary")])
    assert again.success
    (same,) = again.get_asset_materialization_events()
    assert same.materialization.metadata["refresh_mode"].value == "NO_DATA"
    assert same.materialization.tags["dagster/data_version"] == "2"
    modes = [r.refresh_mode for r in REFRESHES.newest_first(lake.catalog, "summary")]
    assert modes.count("NO_DATA") == 1


def committed(instance: DagsterInstance, name: str, version: int) -> None:
    """A commit as every front end reports it: its Delta version is its data version."""
    instance.report_runless_asset_event(
        AssetMaterialization(name, tags={DATA_VERSION_TAG: str(version)})
    )


def test_the_automation_sensor_requests_a_refresh_when_a_source_changes(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(f"CREATE TABLE t (k STRING, v INT); {SUMMARY}")
    defs = build_definitions(lake.settings)
    first = evaluate_automation_conditions(defs=defs, instance=instance)
    committed(instance, "summary", 1)
    settled = evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert settled.total_requested == 0

    committed(instance, "t", 1)
    changed = evaluate_automation_conditions(defs=defs, instance=instance, cursor=settled.cursor)
    assert changed.total_requested == 1
    assert changed.get_requested_partitions(AssetKey("summary")) == {None}
    committed(instance, "summary", 2)
    refreshed = evaluate_automation_conditions(defs=defs, instance=instance, cursor=changed.cursor)

    # A load that committed nothing materializes t at the version it had: nothing to refresh.
    committed(instance, "t", 1)
    empty = evaluate_automation_conditions(defs=defs, instance=instance, cursor=refreshed.cursor)
    assert empty.total_requested == 0


@pytest.mark.parametrize("seen", ["on the tick after the request", "on a later tick"])
def test_a_source_update_during_a_refresh_requests_another_refresh(
    lake: LakeSession, instance: DagsterInstance, seen: str
) -> None:
    lake.sql(f"CREATE TABLE t (k STRING, v INT); {SUMMARY}")
    defs = build_definitions(lake.settings)

    def tick(cursor: Any = None) -> EvaluateAutomationConditionsResult:
        return evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)

    first = tick()
    committed(instance, "summary", 1)
    committed(instance, "t", 1)
    requested = tick(first.cursor)
    assert requested.total_requested == 1
    cursor = requested.cursor
    if seen == "on a later tick":
        cursor = tick(cursor).cursor

    # t commits again while that refresh runs; the refresh, which read t before, ends after.
    committed(instance, "t", 2)
    committed(instance, "summary", 2)
    again = tick(cursor)
    assert again.get_requested_partitions(AssetKey("summary")) == {None}
    assert tick(tick(again.cursor).cursor).total_requested == 0


def test_an_automatic_refresh_after_a_failed_upstream_refresh_is_skipped(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        "CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1);"
        "CREATE DYNAMIC TABLE picked AS SELECT k, v FROM t WHERE v > 0;"
        "CREATE DYNAMIC TABLE counted AS SELECT k, COUNT(*) AS n FROM picked GROUP BY k"
    )
    lake.sql("INSERT INTO t VALUES ('b', 2)")
    shutil.rmtree(Path(lake.catalog.get(TableEntry, "t").location) / "_delta_log")
    job = build_definitions(lake.settings).resolve_implicit_global_asset_job_def()
    failed = job.execute_in_process(
        instance=instance, asset_selection=[AssetKey("picked")], raise_on_error=False
    )
    assert not failed.success

    automatic = job.execute_in_process(
        instance=instance,
        asset_selection=[AssetKey("counted")],
        tags={TRIGGER_TAG: "UPSTREAM"},
    )
    assert automatic.success
    assert automatic.get_asset_materialization_events() == []
    newest = REFRESHES.newest_first(lake.catalog, "counted")[0]
    assert (newest.state, newest.refresh_trigger) == ("SKIPPED", "UPSTREAM")
    assert newest.reason == "the latest refresh or load of picked failed"
    assert REFRESHES.newest_first(lake.catalog, "picked")[0].state == "FAILED"
