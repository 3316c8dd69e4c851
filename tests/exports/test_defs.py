"""Changelog exports in Dagster: an asset per export, partitioned by UTC day from its source's
creation, downstream of the source; the day just ended requested after midnight UTC, not before;
and a partition materialized on real Spark writing its day's records, with their counts and the
versions covered as metadata."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    DailyPartitionsDefinition,
    DefaultSensorStatus,
    Definitions,
    EvaluateAutomationConditionsResult,
    evaluate_automation_conditions,
    materialize,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.exports.defs import (
    AUTOMATIC,
    DAY_JUST_ENDED,
    EXPORTS_GROUP,
    EXPORTS_SENSOR,
    TRIGGER_TAG,
    day_range,
    export_asset,
    export_key,
    first_day,
)
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.grammar import TimeRange
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

SOURCE = (
    "CREATE TABLE t (k INT, name STRING, PRIMARY KEY (k));"
    "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');"
    "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE t_log"
)
DAY = "2026-03-02"


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def lazy(home: Path) -> dict[str, Any]:
    """The resources an export asset takes, built without starting anything."""
    return {
        "spark": DeltaSparkResource.from_settings(
            LakeSettings(lake_home=home, jars_dir=LakeSettings.from_env().jars_dir)
        ),
        "catalog": CatalogResource(lake_home=str(home)),
    }


def values(event: Any) -> dict[str, Any]:
    return {key: value.value for key, value in event.materialization.metadata.items()}


class Ticks:
    """The exports sensor's evaluations, one after another, at times the test gives."""

    def __init__(self, defs: Definitions, instance: DagsterInstance) -> None:
        self.defs, self.instance, self.cursor = defs, instance, None

    def at(self, *moment: int) -> EvaluateAutomationConditionsResult:
        result = evaluate_automation_conditions(
            defs=self.defs,
            instance=self.instance,
            cursor=self.cursor,
            evaluation_time=datetime(*moment, tzinfo=UTC),
        )
        self.cursor = result.cursor
        return result


def test_an_export_is_a_daily_asset_from_its_sources_creation_downstream_of_it(
    lake: LakeSession,
) -> None:
    lake.sql(SOURCE)
    created = lake.catalog.get(TableEntry, "t").created_at
    defs = build_definitions(lake.settings)
    graph = defs.resolve_asset_graph()
    node = graph.get(export_key("e"))
    assert node.group_name == EXPORTS_GROUP
    assert node.kinds == {"spark", "delta"}
    assert node.parent_keys == {AssetKey("t")}
    assert node.automation_condition == DAY_JUST_ENDED
    assert defs.resolve_assets_def(export_key("e")).op.pool == "export_e"
    partitions = node.partitions_def
    assert isinstance(partitions, DailyPartitionsDefinition)
    assert partitions.timezone == "UTC"
    assert partitions.get_first_partition_key() == created[:10]  # created_at is UTC, ISO

    sensor = defs.resolve_sensor_def(EXPORTS_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.asset_selection.resolve(graph) == {export_key("e")}


def test_partitions_start_on_the_utc_day_the_source_was_created(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(
        TableEntry(
            "t",
            location=str(tmp_path / "t"),
            columns=(),
            created_at="2026-03-01T23:30:00.000-02:00",
        )
    )
    export = ExportEntry("e", source="t", created_at="2026-03-05T10:00:00.000+00:00")
    assert first_day(catalog, export) == "2026-03-02"
    # A source gone from the catalog: the export's own creation day.
    assert first_day(catalog, ExportEntry("f", source="gone", created_at=export.created_at)) == (
        "2026-03-05"
    )
    assert day_range("2026-03-02") == TimeRange.of_day("20260302")


def test_the_day_just_ended_is_requested_after_midnight_utc_and_not_before(
    instance: DagsterInstance, tmp_path: Path
) -> None:
    export = ExportEntry("e", source="t", to_table="t_log")
    asset = export_asset(export, "2026-03-01", LakeSession)
    ticks = Ticks(Definitions(assets=[asset], resources=lazy(tmp_path)), instance)
    partitions = asset.partitions_def
    assert partitions is not None
    # Today's partition exists (a day so far can be exported by hand); it is never requested.
    after_midnight = datetime(2026, 3, 3, 0, 0, 5, tzinfo=UTC)
    assert partitions.get_partition_keys(current_time=after_midnight) == [
        "2026-03-01",
        DAY,
        "2026-03-03",
    ]

    assert ticks.at(2026, 3, 2, 23, 59, 50).total_requested == 0
    assert ticks.at(2026, 3, 3, 0, 0, 5).get_requested_partitions(export_key("e")) == {DAY}
    assert ticks.at(2026, 3, 3, 0, 0, 10).total_requested == 0
    assert ticks.at(2026, 3, 3, 12, 0, 0).total_requested == 0
    # Exported by hand during the day: still exported again after midnight, in full.
    instance.report_runless_asset_event(
        AssetMaterialization(export_key("e"), partition="2026-03-03")
    )
    assert ticks.at(2026, 3, 3, 23, 0, 0).total_requested == 0
    assert ticks.at(2026, 3, 4, 0, 0, 3).get_requested_partitions(export_key("e")) == {"2026-03-03"}
    assert ticks.at(2026, 3, 4, 0, 0, 8).total_requested == 0


def test_the_first_day_is_requested_only_once_it_has_ended(
    instance: DagsterInstance, tmp_path: Path
) -> None:
    asset = export_asset(ExportEntry("e", source="t", to_table="t_log"), DAY, LakeSession)
    ticks = Ticks(Definitions(assets=[asset], resources=lazy(tmp_path)), instance)
    assert ticks.at(2026, 3, 2, 10, 0, 0).total_requested == 0
    assert ticks.at(2026, 3, 3, 0, 0, 1).get_requested_partitions(export_key("e")) == {DAY}


def test_materializing_a_day_exports_its_records_with_their_counts(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"{SOURCE}; INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');"
        "UPDATE t SET name = 'z' WHERE k = 1; UPDATE t SET name = NULL WHERE k = 2;"
        "DELETE FROM t WHERE k = 3"
    )
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    asset = export_asset(lake.catalog.get(ExportEntry, "e"), today, LakeSession)
    resources = lazy(lake.settings.lake_home)

    def run(**tags: str) -> Any:
        return materialize(
            [asset], instance=instance, resources=resources, partition_key=today, tags=tags,
            raise_on_error=False,
        )  # fmt: skip

    done = run(**{TRIGGER_TAG: AUTOMATIC})
    assert done.success
    (event,) = done.get_asset_materialization_events()
    assert event.materialization.partition == today
    metadata = values(event)
    (written,) = lake.sql("SELECT op_type, count(*) FROM t_log GROUP BY op_type")
    assert dict(tuple(row) for row in written.rows) == {"U": 4, "DA": 1, "DR": 1}
    assert {key: metadata[key] for key in ("records_U", "records_DA", "records_DR")} == {
        "records_U": 4,
        "records_DA": 1,
        "records_DR": 1,
    }
    assert metadata["records"] == 6
    assert metadata["up_to_date"] is False
    assert metadata["lake/trigger"] == AUTOMATIC
    assert metadata["first_version"] == 0
    assert metadata["last_version"] == lake.catalog.get(TableEntry, "t").version
    assert metadata["versions_read"] == metadata["last_version"] + 1
    assert metadata["complete"] is False  # the day is not over
    assert metadata["commits"] == 4

    # Nothing committed since: up to date, still a materialization of the day.
    again = run()
    (event,) = again.get_asset_materialization_events()
    metadata = values(event)
    assert (metadata["up_to_date"], metadata["records"], metadata["records_U"]) == (True, 0, 0)
    assert metadata["lake/trigger"] == "MANUAL"
    assert "first_version" not in metadata

    # A LakeError fails the run with its message.
    lake.sql("ALTER TABLE t SET PROPERTIES ('change_tracking' = 'false')")
    failed = run()
    assert not failed.success
    (failure,) = failed.get_step_failure_events()
    error = failure.step_failure_data.error.cause
    assert error.cls_name == "LakeError"
    assert "LakeError: table t does not track its changes" in error.message
