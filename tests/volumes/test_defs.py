"""Volumes in Dagster: every volume is an observable asset, observed by one sensor that lists the
volumes (no Spark) and reports each listing's digest as the volume's data version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterInvariantViolationError,
    DefaultSensorStatus,
    SensorResult,
    build_sensor_context,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import now_utc
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import minimum_interval
from lake_assets.definitions import build_definitions
from lake_assets.session import LakeSession
from lake_assets.volumes.defs import OBSERVE_INTERVAL_SECONDS, VOLUMES_SENSOR
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.kind import DIRECTORIES_SENSOR
from tests.ingest_helpers import local_volume, put, rows
from tests.pipes.test_defs import no_spark


@pytest.fixture
def settings(tmp_path: Path) -> LakeSettings:
    """Volumes `landing` and `archive` (recursive) on a LOCAL connection; no pipe, no JVM."""
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    lake.sql("CREATE STORAGE CONNECTION c TYPE LOCAL")
    for name, recursive in (("landing", False), ("archive", True)):
        add_volume(settings, name, tmp_path / name, recursive=recursive)
    return settings


def add_volume(
    settings: LakeSettings,
    name: str,
    directory: Path,
    connection: str = "c",
    recursive: bool = True,
) -> None:
    directory.mkdir(exist_ok=True)
    Catalog(settings.catalog_path).add(
        VolumeEntry(
            name=name,
            created_at=now_utc(),
            location=f"{directory.as_uri()}/",
            connection=connection,
            recursive=recursive,
        )
    )


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def observed(settings: LakeSettings, instance: DagsterInstance) -> dict[str, tuple[str, int]]:
    """One tick of the volumes sensor: each volume's data version and file count."""
    defs = build_definitions(settings)
    sensor = defs.resolve_sensor_def(VOLUMES_SENSOR)
    result = sensor(build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(result, SensorResult), result
    # The tick says what it did: it requests no run.
    names = [event.asset_key.path[-1] for event in result.asset_events]
    assert result.skip_reason.skip_message == f"observed {', '.join(names)}"
    return {
        event.asset_key.path[-1]: (
            event.tags["dagster/data_version"],
            event.metadata["files"].value,
        )
        for event in result.asset_events
    }


def test_every_volume_is_an_observable_asset(settings: LakeSettings) -> None:
    defs = build_definitions(settings)
    graph = defs.resolve_asset_graph()
    for name in ("landing", "archive"):
        volume = graph.get(AssetKey(["volume", name]))
        assert volume.is_observable
        assert not volume.is_materializable
        assert volume.group_name == "volumes"
    sensor = defs.resolve_sensor_def(VOLUMES_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == minimum_interval(OBSERVE_INTERVAL_SECONDS) == 29


def test_the_sensor_reports_each_volume_s_listing_digest(
    settings: LakeSettings, instance: DagsterInstance, tmp_path: Path
) -> None:
    empty = observed(settings, instance)
    assert empty["landing"] == empty["archive"]
    assert empty["landing"][1] == 0

    put(tmp_path / "archive", "2026/a.csv", "1,a\n")
    put(tmp_path / "landing", "deep/b.csv", "2,b\n")  # below a volume that is not RECURSIVE
    deeper = observed(settings, instance)
    assert deeper["archive"][1] == 1
    assert deeper["archive"][0] != empty["archive"][0]
    assert deeper["landing"] == empty["landing"]

    put(tmp_path / "landing", "c.csv", "3,c\n")
    assert observed(settings, instance)["landing"][1] == 1


def test_a_volume_that_cannot_be_listed_does_not_hide_the_others(
    settings: LakeSettings, instance: DagsterInstance, tmp_path: Path
) -> None:
    add_volume(settings, "orphan", tmp_path / "orphan", connection="gone")
    assert set(observed(settings, instance)) == {"landing", "archive"}


def test_observing_a_volume_from_dagster_reports_what_the_sensor_reports(
    settings: LakeSettings, instance: DagsterInstance, tmp_path: Path
) -> None:
    put(tmp_path / "archive", "a.csv", "1,a\n")
    key = AssetKey(["volume", "archive"])
    job = build_definitions(settings).resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance, asset_selection=[key]).success
    (record,) = instance.fetch_observations(key, limit=1).records
    version = record.event_log_entry.asset_observation.tags["dagster/data_version"]
    assert version == observed(settings, instance)["archive"][0]


def test_a_volume_a_stream_reads_refreshes_its_directory_table_by_itself(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    directory = local_volume(lake, tmp_path / "photos", "photos", auto_refresh=False)
    defs = build_definitions(lake.settings)
    with pytest.raises(DagsterInvariantViolationError):  # no stream reads it: nothing to keep
        defs.resolve_sensor_def(DIRECTORIES_SENSOR)
    lake.sql("CREATE STREAM arrivals ON VOLUME photos")
    defs = build_definitions(lake.settings)
    sensor = defs.resolve_sensor_def(DIRECTORIES_SENSOR)
    context = build_sensor_context(instance=instance, definitions=defs)

    idle = sensor(context)
    assert isinstance(idle, SensorResult)
    assert idle.run_requests == []
    assert idle.skip_reason.skip_message == "every directory is current"
    put(directory, "cat.jpg", "meow")
    (request,) = sensor(context).run_requests
    assert request.job_name == "refresh_directory_photos_job"
    assert defs.resolve_job_def(request.job_name).execute_in_process(instance=instance).success
    assert rows(lake, "SELECT __change_type, relative_path FROM arrivals") == [
        ("INSERT", "cat.jpg")
    ]
    assert sensor(context).run_requests == []
