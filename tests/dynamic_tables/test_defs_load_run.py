"""A pipe's run refreshes the dynamic tables that read its table in the same run, right after the
load's commit; the automation then asks for no second refresh of that load, and a refresh that
fails there leaves the load committed and reported, and asked for again by the automation."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    EvaluateAutomationConditionsResult,
    evaluate_automation_conditions,
)

from lake_assets.automation import DATA_VERSION_TAG, refreshed_in_load_run
from lake_assets.definitions import build_definitions
from lake_assets.dynamic_tables.defs import TRIGGER_TAG
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESHES
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import local_volume, put, rows

OBJECTS = (
    "CREATE TABLE t (k STRING, v DECIMAL(10,2));"
    "CREATE PIPE p AS COPY INTO t FROM VOLUME v USING CSV PURGE = TRUE;"
    "CREATE DYNAMIC TABLE summary AS SELECT k, COUNT(*) AS n, SUM(v) AS total FROM t GROUP BY k;"
    # Reads a dynamic table: refreshed after it by the automation, not in the load's run.
    "CREATE DYNAMIC TABLE busy AS SELECT k FROM summary WHERE n > 1"
)


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def landed(lake: LakeSession, tmp_path: Path) -> None:
    """The objects, and one file in the pipe's volume."""
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(OBJECTS)
    put(volume, "a.csv", "a,1.50\na,2.00\nb,5.00\n")


def materialized(result: Any) -> list[AssetKey]:
    return [event.asset_key for event in result.get_asset_materialization_events()]


def test_a_pipes_run_loads_its_table_then_refreshes_the_dynamic_table_reading_it(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    landed(lake, tmp_path)
    job = build_definitions(lake.settings).resolve_job_def("ingest_t_job")

    result = job.execute_in_process(instance=instance)
    assert result.success
    assert materialized(result) == [AssetKey("t"), AssetKey("summary")]
    refresh = result.get_asset_materialization_events()[1].materialization.metadata
    assert (refresh["refresh_trigger"].value, refresh["rows_inserted"].value) == ("UPSTREAM", 2)
    assert rows(lake, "SELECT k, n, total FROM summary ORDER BY k") == [
        ("a", 2, Decimal("3.50")),
        ("b", 1, Decimal("5.00")),
    ]
    # The run said, before it reported t, which refreshes follow the load.
    tags = instance.get_run_by_id(result.run_id).tags
    assert tags[refreshed_in_load_run(AssetKey("summary"))] == "t"
    assert refreshed_in_load_run(AssetKey("busy")) not in tags


def test_the_automation_asks_for_no_second_refresh_of_a_load_its_run_refreshed(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    landed(lake, tmp_path)
    defs = build_definitions(lake.settings)

    def tick(cursor: Any = None) -> EvaluateAutomationConditionsResult:
        return evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)

    def requested(result: EvaluateAutomationConditionsResult) -> set[AssetKey]:
        return {r.key for r in result.results if r.true_subset.size}

    first = tick()
    assert defs.resolve_job_def("ingest_t_job").execute_in_process(instance=instance).success
    after = tick(first.cursor)
    # summary read the load in its run; busy reads summary, which changed.
    assert requested(after) == {AssetKey("busy")}
    settled = tick(after.cursor)
    assert requested(settled) == set()

    # A commit after the load's (an INSERT, reported as `lake sql` reports it) is t's latest
    # update: it asks for a refresh.
    lake.sql("INSERT INTO t VALUES ('c', 1.00)")
    version = str(lake.catalog.get(TableEntry, "t").version)
    instance.report_runless_asset_event(AssetMaterialization("t", tags={DATA_VERSION_TAG: version}))
    assert requested(tick(settled.cursor)) == {AssetKey("summary")}


def test_a_refresh_that_fails_in_the_load_run_leaves_the_load_committed_and_reported(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    landed(lake, tmp_path)
    defs = build_definitions(lake.settings)
    first = evaluate_automation_conditions(defs=defs, instance=instance)
    log = Path(lake.catalog.get(DynamicTableEntry, "summary").location) / "_delta_log"
    aside = tmp_path / "summary_log"
    shutil.move(log, aside)  # summary's refresh cannot read its own log

    failed = defs.resolve_job_def("ingest_t_job").execute_in_process(
        instance=instance, raise_on_error=False
    )
    assert not failed.success
    assert materialized(failed) == [AssetKey("t")]
    (step,) = failed.get_step_failure_events()
    assert step.step_key == "summary"
    assert rows(lake, "SELECT COUNT(*) FROM t") == [(3,)]
    newest = REFRESHES.newest_first(lake.catalog, "summary")[0]
    assert (newest.state, newest.refresh_trigger) == ("FAILED", "UPSTREAM")

    # The run failed, but not t's load: the automation asks for the refresh the run did not
    # make, and that refresh is not skipped for a failed upstream; it reads the load.
    after = evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert {r.key for r in after.results if r.true_subset.size} == {AssetKey("summary")}
    shutil.move(aside, log)
    automatic = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[AssetKey("summary")], tags={TRIGGER_TAG: "UPSTREAM"}
    )
    assert materialized(automatic) == [AssetKey("summary")]
    assert rows(lake, "SELECT k, n FROM summary ORDER BY k") == [("a", 2), ("b", 1)]
