"""A pipe's table and its volume in Dagster: the table is stale only while the volume holds files
it has not loaded, as the UI shows "Upstream data"."""

from __future__ import annotations

from pathlib import Path

from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    SkipReason,
)

from lake_assets.definitions import build_definitions
from lake_assets.session import LakeSession
from tests.ingest_helpers import files, local_volume, put, rows
from tests.pipes.test_defs import PIPE, run_event, tick


def stale(instance: DagsterInstance, table: str, volume: str) -> bool:
    """Dagster's rule for an observed dependency (what the UI shows as "Upstream data"): the
    volume's latest data version differs from the one the table's latest materialization read."""
    materialization = instance.get_latest_materialization_event(AssetKey(table))
    read = materialization.asset_materialization.tags[f"dagster/input_data_version/volume/{volume}"]
    observed = instance.get_latest_data_version_record(AssetKey(["volume", volume]), is_source=True)
    return observed.event_log_entry.asset_observation.tags["dagster/data_version"] != read


def observe(defs: Definitions, instance: DagsterInstance, sensor: str) -> str:
    """A sensor tick whose observations are recorded as the daemon records them; the version."""
    result = tick(defs, instance, sensor)
    for event in result.asset_events:
        instance.report_runless_asset_event(event)
    return result.asset_events[0].tags["dagster/data_version"]


def test_a_table_is_stale_only_while_its_volume_holds_files_it_has_not_loaded(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(f"CREATE TABLE t (id BIGINT, name STRING); {PIPE}")
    put(volume, "a.csv", "1,a\n")
    defs = build_definitions(lake.settings)
    assert defs.resolve_asset_graph().get(AssetKey(["volume", "v"])).is_observable
    before = observe(defs, instance, "p")  # the pipe's sensor sees a.csv and asks for a run

    assert defs.resolve_job_def("ingest_t_job").execute_in_process(instance=instance).success
    assert files(volume) == []  # loaded and purged
    assert not stale(instance, "t", "v")
    assert observe(defs, instance, "lake_volumes") != before  # listed again: empty now
    assert not stale(instance, "t", "v")

    put(volume, "b.csv", "2,b\n")
    observe(defs, instance, "lake_volumes")
    assert stale(instance, "t", "v")
    job = defs.resolve_job_def("ingest_t_job")
    # While a load is under way, only the run observes the volume: a listing taken before its
    # purge and recorded after its observation would leave the table stale with nothing to load.
    under_way = instance.create_run_for_job(job, status=DagsterRunStatus.STARTED)
    assert tick(defs, instance).asset_events == []
    assert isinstance(tick(defs, instance, "lake_volumes"), SkipReason)
    run_event(instance, under_way.run_id, DagsterEventType.RUN_FAILURE)
    assert job.execute_in_process(instance=instance).success
    assert not stale(instance, "t", "v")
    observe(defs, instance, "p")
    assert not stale(instance, "t", "v")
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,)]
