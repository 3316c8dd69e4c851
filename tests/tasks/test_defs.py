"""Tasks in Dagster: an asset per task downstream of the streams it reads, the automation that
runs it (a new stream version, once; never while a run is under way; after a failure at the next
minute, not every tick; a cron SCHEDULE; the loop with the streams sensor's partitions), the
intervals sensor that runs an interval SCHEDULE, and a materialization that runs it on real
Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    AssetKey,
    AssetMaterialization,
    AssetSpec,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    DynamicPartitionsDefinition,
    EvaluateAutomationConditionsResult,
    SensorResult,
    asset,
    build_sensor_context,
    evaluate_automation_conditions,
    materialize,
)

from lake_assets.automation import DATA_VERSION_TAG
from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import minimum_interval
from lake_assets.definitions import build_definitions
from lake_assets.session import LakeSession
from lake_assets.streams.entry import StreamEntry
from lake_assets.streams.kind import STREAMS_SENSOR
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.defs import (
    AUTOMATIC,
    AUTOMATION_INTERVAL_SECONDS,
    TASKS_GROUP,
    TRIGGER_TAG,
    schedule_condition,
    stream_condition,
    task_asset,
    task_key,
)
from lake_assets.tasks.entry import Schedule, TaskEntry
from lake_assets.tasks.kind import INTERVALS_SENSOR, TASKS_SENSOR
from lake_assets.tasks.run_history import RUNS
from lake_assets.volumes.defs import volume_key
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource
from tests.ingest_helpers import local_volume

SOURCE = (
    "CREATE TABLE t (id INT, name VARCHAR); CREATE TABLE STREAM s ON TABLE t "
    "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY'); CREATE TABLE tgt (id INT, name VARCHAR)"
)
CONSUMER = "CREATE TASK consume WHEN STREAM_HAS_DATA('s') AS INSERT INTO tgt SELECT id, name FROM s"
PARTITIONS = "stream_s_versions"
START = datetime(2026, 3, 2, 12, 0, 5, tzinfo=UTC)


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def stream_spec(name: str = "s") -> AssetSpec:
    """A stream's asset as the streams kind defines it: a partition per source commit version."""
    return AssetSpec(
        name, partitions_def=DynamicPartitionsDefinition(name=f"stream_{name}_versions")
    )


def lazy(home: Path) -> dict[str, Any]:
    """The resources a task asset takes, built without starting anything."""
    return {
        "spark": DeltaSparkResource.from_settings(
            LakeSettings(lake_home=home, jars_dir=LakeSettings.from_env().jars_dir)
        ),
        "catalog": CatalogResource(lake_home=str(home)),
    }


def version(number: int) -> str:
    return f"{number:020d}"


class Ticks:
    """The automation sensor's evaluations, one after another, at times the test gives."""

    def __init__(self, defs: Definitions, instance: DagsterInstance) -> None:
        self.defs, self.instance, self.cursor = defs, instance, None

    def at(self, moment: datetime) -> EvaluateAutomationConditionsResult:
        result = evaluate_automation_conditions(
            defs=self.defs, instance=self.instance, cursor=self.cursor, evaluation_time=moment
        )
        self.cursor = result.cursor
        return result


def test_tasks_are_assets_downstream_of_the_streams_they_read(
    lake: LakeSession, tmp_path: Path
) -> None:
    local_volume(lake, tmp_path / "out")
    lake.sql(
        f"{SOURCE}; {CONSUMER};"
        "CREATE TASK nightly SCHEDULE = 'USING CRON 0 2 * * * Europe/Paris' "
        "AS DELETE FROM tgt WHERE id < 0;"
        "CREATE TASK by_hand AS INSERT INTO tgt SELECT id, name FROM s;"
        "CREATE TASK resting WHEN STREAM_HAS_DATA('s') AS INSERT INTO tgt SELECT * FROM s;"
        "ALTER TASK resting SUSPEND;"
        "CREATE TASK unload WHEN STREAM_HAS_DATA('s') AS COPY INTO VOLUME v FROM (SELECT * FROM s) "
        "FILE_FORMAT = (TYPE = CSV)"
    )
    defs = build_definitions(lake.settings)
    graph = defs.resolve_asset_graph()
    for name in ("consume", "nightly", "by_hand", "resting"):
        node = graph.get(task_key(name))
        assert node.group_name == TASKS_GROUP
        assert node.kinds == {"spark"}
        assert defs.resolve_assets_def(task_key(name)).op.pool == f"task_{name}"
    assert graph.get(task_key("consume")).parent_keys == {AssetKey("s")}
    assert graph.get(task_key("nightly")).parent_keys == set()
    assert graph.get(task_key("consume")).automation_condition == stream_condition(["s"])
    assert graph.get(task_key("nightly")).automation_condition == schedule_condition(
        Schedule("USING CRON 0 2 * * * Europe/Paris", cron="0 2 * * *", timezone="Europe/Paris")
    )
    assert graph.get(task_key("by_hand")).automation_condition is None
    assert graph.get(task_key("resting")).automation_condition is None
    # The table the tasks write is downstream of each of them, and stays a table like the rest.
    target = graph.get(AssetKey("tgt"))
    assert target.parent_keys == {
        task_key(name) for name in ("consume", "nightly", "by_hand", "resting")
    }
    assert target.group_name == "tables"
    assert not target.is_materializable
    # So is a volume a task writes files into, which stays observed by its volume's sensor.
    volume = graph.get(volume_key("v"))
    assert volume.parent_keys == {task_key("unload")}
    assert volume.is_observable

    sensor = defs.resolve_sensor_def(TASKS_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == minimum_interval(AUTOMATION_INTERVAL_SECONDS)
    assert sensor.asset_selection.resolve(graph) == {
        task_key(name) for name in ("consume", "nightly", "by_hand", "resting", "unload")
    }


def test_an_interval_schedule_is_run_by_the_intervals_sensor_not_a_cron(
    tmp_path: Path, instance: DagsterInstance
) -> None:
    """Written to the catalog without Spark, created 7.5 minutes ago: `every_7` is due (its runs
    come at created_at + k · 7 minutes, see tests/test_automation.py), `resting` is suspended and
    `nightly` keeps its cron condition."""
    catalog = Catalog(tmp_path / "catalog.db")
    created = (datetime.now(UTC) - timedelta(minutes=7.5)).isoformat(timespec="milliseconds")
    schedules = {
        "every_7": Schedule("7 MINUTE", interval_seconds=420),
        "resting": Schedule("7 MINUTE", interval_seconds=420),
        "nightly": Schedule("USING CRON 0 2 * * *", cron="0 2 * * *"),
    }
    for name, schedule in schedules.items():
        catalog.add(
            TaskEntry(
                name,
                definition="DELETE FROM tgt",
                target="tgt",
                schedule=schedule,
                suspended=name == "resting",
                created_at=created,
            )
        )
    defs = build_definitions(LakeSettings(lake_home=tmp_path))
    graph = defs.resolve_asset_graph()
    assert graph.get(task_key("every_7")).automation_condition is None
    assert schedule_condition(schedules["every_7"]) is None
    assert graph.get(task_key("nightly")).automation_condition == schedule_condition(
        schedules["nightly"]
    )
    sensor = defs.resolve_sensor_def(INTERVALS_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == minimum_interval(AUTOMATION_INTERVAL_SECONDS)
    assert sensor.job.selection.resolve(graph) == {task_key("every_7"), task_key("resting")}

    result = sensor(build_sensor_context(instance=instance, definitions=defs))
    assert isinstance(result, SensorResult)
    (request,) = result.run_requests
    assert request.asset_selection == [task_key("every_7")]
    # The tag that makes the run record its trigger as SCHEDULED (the task has a SCHEDULE).
    assert request.tags == {TRIGGER_TAG: AUTOMATIC}


def test_a_scheduled_task_is_requested_once_per_cron_tick_in_its_time_zone(
    instance: DagsterInstance, tmp_path: Path
) -> None:
    nightly = TaskEntry(
        "nightly",
        definition="DELETE FROM tgt",
        target="tgt",
        schedule=Schedule(
            "USING CRON 0 2 * * * Europe/Paris", cron="0 2 * * *", timezone="Europe/Paris"
        ),
    )
    ticks = Ticks(
        Definitions(assets=[task_asset(nightly, LakeSession)], resources=lazy(tmp_path)), instance
    )
    paris = ZoneInfo("Europe/Paris")
    assert ticks.at(datetime(2026, 3, 2, 1, 59, 50, tzinfo=paris)).total_requested == 0
    assert ticks.at(datetime(2026, 3, 2, 2, 0, 3, tzinfo=paris)).total_requested == 1
    assert ticks.at(datetime(2026, 3, 2, 2, 0, 8, tzinfo=paris)).total_requested == 0
    # 02:00 UTC is 03:00 in Paris: no tick of this task's cron.
    assert ticks.at(datetime(2026, 3, 2, 2, 0, 3, tzinfo=UTC)).total_requested == 0
    assert ticks.at(datetime(2026, 3, 3, 2, 0, 1, tzinfo=paris)).total_requested == 1


def test_a_new_stream_version_requests_one_run_and_never_while_one_is_under_way(
    instance: DagsterInstance,
) -> None:
    """The condition of a task WHEN STREAM_HAS_DATA('s'), on a stand-in task whose body looks at
    the automation while it runs, and fails when told to."""
    state: dict[str, Any] = {"fail": False}

    @asset(key=task_key("k"), deps=["s"], automation_condition=stream_condition(["s"]))
    def k(context) -> None:  # not annotated: this module's annotations are strings
        # A version lands while the run is under way: no second run now.
        context.instance.add_dynamic_partitions(PARTITIONS, [version(3)])
        state["during"] = ticks.at(state["now"]).total_requested
        if state["fail"]:
            raise RuntimeError("the statement failed")

    defs = Definitions(assets=[stream_spec(), stream_spec("other"), k])
    ticks = Ticks(defs, instance)

    def run(at: datetime, fail: bool) -> bool:
        state.update(now=at, fail=fail)
        return materialize([k], instance=instance, raise_on_error=False).success

    assert ticks.at(START).total_requested == 0  # no backlog
    instance.add_dynamic_partitions("stream_other_versions", [version(1)])
    assert ticks.at(START + timedelta(seconds=5)).total_requested == 0  # a stream it does not read
    instance.add_dynamic_partitions(PARTITIONS, [version(1), version(2)])
    assert ticks.at(START + timedelta(seconds=10)).get_requested_partitions(task_key("k")) == {None}
    # Requested once: the pending versions are that run's, however long it takes to start.
    assert ticks.at(START + timedelta(seconds=15)).total_requested == 0

    assert run(START + timedelta(seconds=20), fail=False)
    assert state["during"] == 0
    # Version 3 came while the run was under way: one more run once it is over.
    assert ticks.at(START + timedelta(seconds=25)).total_requested == 1
    for number in (1, 2, 3):  # the streams sensor reports them consumed
        instance.report_runless_asset_event(_consumed(number))
    assert ticks.at(START + timedelta(seconds=30)).total_requested == 0

    # A failed run leaves the backlog: retried at the next minute, not on every tick.
    instance.add_dynamic_partitions(PARTITIONS, [version(4)])
    assert ticks.at(START + timedelta(seconds=35)).total_requested == 1
    assert not run(START + timedelta(seconds=40), fail=True)
    for seconds in (45, 50):
        assert ticks.at(START + timedelta(seconds=seconds)).total_requested == 0
    instance.add_dynamic_partitions(PARTITIONS, [version(5)])  # new data does not hurry it
    assert ticks.at(START + timedelta(seconds=53)).total_requested == 0
    assert ticks.at(START + timedelta(seconds=61)).total_requested == 1  # 12:01:00 passed
    assert run(START + timedelta(seconds=66), fail=False)
    for number in (4, 5):
        instance.report_runless_asset_event(_consumed(number))
    assert ticks.at(START + timedelta(seconds=71)).total_requested == 0
    assert ticks.at(START + timedelta(seconds=125)).total_requested == 0


def _consumed(number: int) -> AssetMaterialization:
    """What the streams sensor reports once the stream's offset has passed a version."""
    return AssetMaterialization("s", partition=version(number))


def test_materializing_a_task_runs_it_and_records_what_it_consumed(
    lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The instance at DAGSTER_HOME, as a run's: the task's write is reported there.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with DagsterInstance.get() as instance:
        materializing_a_task(lake, instance)


def materializing_a_task(lake: LakeSession, instance: DagsterInstance) -> None:
    # The task also reads a plain table, which DROP TABLE may take away (its target it may not).
    lake.sql(
        f"{SOURCE}; CREATE TABLE hidden (id INT); CREATE TASK consume WHEN STREAM_HAS_DATA('s') AS "
        "INSERT INTO tgt SELECT id, name FROM s WHERE id NOT IN (SELECT id FROM hidden);"
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')"
    )
    start = lake.catalog.get(StreamEntry, "s").offset
    end = start + 1
    entry = lake.catalog.get(TaskEntry, "consume")
    resources = lazy(lake.settings.lake_home)

    def run(**tags: str) -> Any:
        return materialize(
            [task_asset(entry, LakeSession)], instance=instance, resources=resources, tags=tags,
            raise_on_error=False,
        )  # fmt: skip

    done = run()
    assert done.success
    (event,) = done.get_asset_materialization_events()
    metadata = {key: value.value for key, value in event.materialization.metadata.items()}
    assert metadata["rows_written"] == 2
    assert metadata["lake/streams"] == {"s": [start, end]}
    assert metadata["lake/trigger"] == "MANUAL"
    (result,) = lake.sql("SELECT id, name FROM tgt ORDER BY id")
    assert [tuple(row) for row in result.rows] == [(1, "a"), (2, "b")]
    # Its write is an event of the table it wrote, whose data version is the Delta version.
    (written,) = instance.fetch_materializations(AssetKey("tgt"), limit=5).records
    version = lake.catalog.get(TableEntry, "tgt").version
    assert written.asset_materialization.tags[DATA_VERSION_TAG] == str(version)

    # Requested by the sensor with nothing pending: SKIPPED, and nothing materialized.
    skipped = run(**{TRIGGER_TAG: AUTOMATIC})
    assert skipped.success
    assert skipped.get_asset_materialization_events() == []
    newest = RUNS.newest_first(lake.catalog, "consume")[0]
    assert (newest.state, newest.trigger) == ("SKIPPED", "STREAM")

    # A failing run fails the Dagster run, and history says why.
    lake.sql("INSERT INTO t VALUES (3, 'c'); DROP TABLE hidden")
    failed = run(**{TRIGGER_TAG: AUTOMATIC})
    assert not failed.success
    newest = RUNS.newest_first(lake.catalog, "consume")[0]
    assert (newest.state, newest.trigger) == ("FAILED", "STREAM")
    assert newest.error_message.startswith("table hidden does not exist")
    assert lake.catalog.get(StreamEntry, "s").offset == end


def test_a_source_commit_requests_the_task_through_the_streams_sensor(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    """The whole loop with the streams kind's own sensor: a commit gets a partition key, the
    task is requested, and once it consumed, the key is reported and nothing more is asked."""
    lake.sql(f"{SOURCE}; {CONSUMER}")
    defs = build_definitions(lake.settings)
    streams = defs.resolve_sensor_def(STREAMS_SENSOR)
    ticks = Ticks(defs, instance)
    cursor: str | None = None

    def track() -> None:
        nonlocal cursor
        context = build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
        result = streams(context)
        for request in result.dynamic_partitions_requests:
            assert isinstance(request, AddDynamicPartitionsRequest)
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
        for event in result.asset_events:
            instance.report_runless_asset_event(event)
        cursor = result.cursor

    track()
    assert ticks.at(START).total_requested == 0
    lake.sql("INSERT INTO t VALUES (1, 'a')")
    track()
    requested = ticks.at(START + timedelta(seconds=5))
    assert requested.get_requested_partitions(task_key("consume")) == {None}
    lake.sql("EXECUTE TASK consume")
    track()
    assert instance.get_materialized_partitions(AssetKey("s")) == {
        version(lake.catalog.get(StreamEntry, "s").offset)
    }
    assert ticks.at(START + timedelta(seconds=10)).total_requested == 0


@pytest.mark.slow
def test_loading_tasks_into_the_code_location_starts_no_jvm(tmp_path: Path) -> None:
    Catalog(tmp_path / "catalog.db").add(
        TaskEntry(
            "consume",
            definition="INSERT INTO tgt SELECT * FROM s",
            target="tgt",
            streams=("s",),
            when=(("s",),),
        )
    )
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "from lake_assets.definitions import defs\n"
            "from pyspark import SparkContext\n"
            "keys = defs.resolve_asset_graph().get_all_asset_keys()\n"
            "print(sorted(k.to_user_string() for k in keys), SparkContext._gateway is None)\n",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "LAKE_HOME": str(tmp_path)},
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "'task/consume'" in loaded.stdout
    assert loaded.stdout.strip().endswith("True")
