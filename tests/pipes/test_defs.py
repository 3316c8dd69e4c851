"""Pipes in Dagster: a sensor per pipe that never starts Spark, and an ingestion asset per table
that loads its pipes' files on real Spark + Delta and checks that none failed."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DagsterEvent,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    EventLogEntry,
    SensorResult,
    SkipReason,
    build_sensor_context,
)
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column, now_utc
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.pipes import sensors
from lake_assets.pipes.checks import FILES_CHECK
from lake_assets.pipes.defs import OBJECT_TAG
from lake_assets.pipes.sensors import BATCH_TAG
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Expectation
from lake_assets.volumes.entry import VolumeEntry
from tests.ingest_helpers import age, files, local_volume, properties, put, rows

PIPE = "CREATE PIPE p POLL_INTERVAL = 7 AS COPY INTO t FROM VOLUME v USING CSV PURGE = TRUE"


def no_spark() -> SparkSession:
    raise AssertionError("the sensor and the definitions must not start Spark")


@dataclass
class Home:
    settings: LakeSettings
    lake: LakeSession
    volume: Path


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """Connection c, volume v, tables t (fed by pipe p) and plain — all without a JVM: the volume
    and tables are catalog entries (their Delta tables are not needed to list and decide)."""
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    volume = tmp_path / "incoming"
    volume.mkdir()
    lake.sql("CREATE STORAGE CONNECTION c TYPE LOCAL")
    lake.catalog.add(
        VolumeEntry(
            name="v",
            created_at=now_utc(),
            location=f"{volume.as_uri()}/",
            connection="c",
            auto_refresh=True,
        )
    )
    columns = (Column("id", "BIGINT"), Column("name", "STRING"))
    for table in ("t", "plain"):
        lake.catalog.add(TableEntry(table, str(settings.warehouse / f"{table}-1"), columns))
    lake.sql(PIPE)
    return Home(settings, lake, volume)


def tick(defs: Definitions, instance: DagsterInstance, sensor: str = "p") -> object:
    context = build_sensor_context(instance=instance, definitions=defs)
    return defs.resolve_sensor_def(sensor)(context)


def run_key(result: object) -> str:
    assert isinstance(result, SensorResult), result
    assert result.skip_reason is None
    (request,) = result.run_requests
    return request.run_key


def test_the_definitions_of_a_pipe(home: Home) -> None:
    defs = build_definitions(home.settings)
    graph = defs.resolve_asset_graph()
    table = graph.get(AssetKey("t"))
    assert table.is_materializable
    # Every table is in one group, whoever writes it (a pipe's load or SQL).
    assert table.group_name == graph.get(AssetKey("plain")).group_name == "tables"
    assert table.check_keys == {AssetCheckKey(AssetKey("t"), FILES_CHECK)}
    # The check's own description says what it checks; only an evaluation says how a load went.
    (spec,) = defs.resolve_assets_def(AssetKey("t")).check_specs
    assert spec.description.startswith("passes when every file a load read was loaded")
    assert AssetKey(["volume", "v"]) in table.parent_entity_keys
    volume = graph.get(AssetKey(["volume", "v"]))
    assert not volume.is_materializable
    assert volume.group_name == "volumes"
    assert not graph.get(AssetKey("plain")).is_materializable  # no pipe: written by SQL only
    job = defs.resolve_job_def("ingest_t_job")
    assert job.tags[OBJECT_TAG] == "table:t"
    sensor = defs.resolve_sensor_def("p")
    assert sensor.job_name == "ingest_t_job"
    # POLL_INTERVAL = 7 on the daemon's 5-s loop: a tick every 10 s, declared a second under.
    assert sensor.minimum_interval_seconds == 9
    assert sensor.description.startswith(
        "pipe p, every 10 s (POLL_INTERVAL = 7, on the Dagster daemon's 5-s loop): COPY INTO t "
    )
    assert sensor.default_status == DefaultSensorStatus.RUNNING


def test_the_pipe_sensor_asks_for_one_run_per_batch_of_settled_files(
    home: Home, instance: DagsterInstance
) -> None:
    defs = build_definitions(home.settings)
    idle = tick(defs, instance)
    assert isinstance(idle, SensorResult)
    assert idle.run_requests == []
    assert idle.skip_reason.skip_message == "no new files"
    (observed,) = idle.asset_events
    assert observed.asset_key == AssetKey(["volume", "v"])
    assert {k: v.value for k, v in observed.metadata.items()} == {"files": 0, "bytes": 0}

    a = put(home.volume, "a.csv", "1,a\n", seconds=-3600)  # still being written
    waiting = tick(defs, instance)
    assert waiting.skip_reason.skip_message == "no new files"
    assert waiting.asset_events[0].metadata["files"].value == 1
    age(a)
    put(home.volume, "day=2/b.csv", "2,b\n")
    first = tick(defs, instance)
    key = run_key(first)
    assert key.startswith("p-")
    assert first.asset_events[0].metadata["files"].value == 2
    (before,), (after,) = idle.asset_events, first.asset_events
    assert before.tags["dagster/data_version"] != after.tags["dagster/data_version"]

    assert run_key(tick(defs, instance)) == key  # the same files: the same run, deduplicated
    put(home.volume, "day=2/b.csv", "2,b\n3,c\n")
    assert run_key(tick(defs, instance)) != key  # a changed file is a new batch

    home.lake.sql("ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE")
    paused = tick(defs, instance)
    assert isinstance(paused, SkipReason)
    assert "PAUSED" in paused.skip_message
    home.lake.sql("ALTER PIPE p SET PIPE_EXECUTION_PAUSED = FALSE")
    assert run_key(tick(defs, instance)).startswith("p-")
    home.lake.sql("DROP PIPE p")
    dropped = tick(defs, instance)
    assert isinstance(dropped, SkipReason)
    assert dropped.skip_message == "pipe p was dropped"


def run_event(instance: DagsterInstance, run_id: str, kind: DagsterEventType) -> None:
    """What the run's own process reports when it starts or fails."""
    instance.handle_new_event(
        EventLogEntry(
            error_info=None, level="DEBUG", user_message="", run_id=run_id,
            timestamp=time.time(), dagster_event=DagsterEvent(kind.value, job_name="ingest_t_job"),
        )
    )  # fmt: skip


def test_the_pipe_sensor_asks_for_no_second_run_while_one_has_not_started(
    home: Home, instance: DagsterInstance
) -> None:
    defs = build_definitions(home.settings)
    put(home.volume, "a.csv", "1,a\n")
    queued = DagsterRun(job_name="ingest_t_job", run_id=str(uuid.uuid4()))
    instance.add_run(queued.with_status(DagsterRunStatus.STARTING))  # launched, loading its code
    waiting = tick(defs, instance)
    assert waiting.run_requests == []
    assert waiting.skip_reason.skip_message == (
        "1 new files; the queued run of ingest_t_job loads them"
    )
    # A started run may have listed the volume before the file came: a new run is asked for.
    run_event(instance, queued.run_id, DagsterEventType.RUN_START)
    assert instance.get_run_by_id(queued.run_id).status == DagsterRunStatus.STARTED
    key = run_key(tick(defs, instance))
    assert key.startswith("p-")
    # While that batch's run loads it, the sensor says so (Dagster would drop the same run key
    # without a word).
    loading = DagsterRun(job_name="ingest_t_job", run_id=str(uuid.uuid4()), tags={BATCH_TAG: key})
    instance.add_run(loading.with_status(DagsterRunStatus.STARTED))
    assert tick(defs, instance).skip_reason.skip_message == (
        f"1 new files; run {loading.run_id[:8]} of this batch is STARTED"
    )


def test_a_batch_whose_run_failed_is_asked_for_again_after_a_pause(
    home: Home, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    defs = build_definitions(home.settings)
    put(home.volume, "a.csv", "1,a\n")
    first = tick(defs, instance)
    key = run_key(first)
    assert first.run_requests[0].tags[BATCH_TAG] == key
    crashed = DagsterRun(job_name="ingest_t_job", run_id=str(uuid.uuid4()), tags={BATCH_TAG: key})
    instance.add_run(crashed.with_status(DagsterRunStatus.STARTED))
    run_event(instance, crashed.run_id, DagsterEventType.RUN_FAILURE)
    assert instance.get_run_by_id(crashed.run_id).status == DagsterRunStatus.FAILURE
    waiting = tick(defs, instance)
    assert waiting.run_requests == []
    assert waiting.skip_reason.skip_message == "1 new files; the last run failed, retrying soon"
    monkeypatch.setattr(sensors, "RETRY_AFTER_SECONDS", 0)
    retried = tick(defs, instance)
    assert run_key(retried) == f"{key}-retry1"
    assert retried.run_requests[0].tags[BATCH_TAG] == key


def materialized(result: object) -> tuple[dict[str, object], bool, str]:
    """The run's one materialization metadata (its data version, its schema's column names), and
    its files check: passed, failed files; a failed file's error is in the check's description
    too (as Markdown that renders as written)."""
    assert result.success
    (event,) = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    metadata["data_version"] = event.materialization.tags["dagster/data_version"]
    metadata["columns"] = [c.name for c in metadata.pop("dagster/column_schema").columns]
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == FILES_CHECK
    if check.passed:
        # the evaluation's, not the spec's
        assert check.description == "no file failed to load and no row was rejected"
    else:
        assert check.description == markdown_text(str(metadata["lake/first_error"]))
    return metadata, check.passed, check.metadata["failed_files"].value


def test_the_ingestion_asset_loads_the_files_and_checks_them(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(f"CREATE TABLE t (id BIGINT, name STRING); {PIPE}")
    put(volume, "a.csv", "1,a\n2,b\n")
    put(volume, "bad.csv", "3,c\nx,d\n")
    defs = build_definitions(lake.settings)
    job = defs.resolve_job_def("ingest_t_job")

    result = job.execute_in_process(instance=instance)
    metadata, passed, failed = materialized(result)
    bad = (volume / "bad.csv").as_uri()
    first_error = (
        "1 file(s) failed to load and stay in the volume, not loaded again until they change; "
        f"first: {bad}: column id: 'x' is not a valid BIGINT"
    )
    assert metadata == {
        "rows_loaded": 2,
        "rows_rejected": 0,
        "files_loaded": 1,
        "files_failed": 1,
        "files_skipped_changed": 0,
        "files_purged": 1,
        "dagster/row_count": 2,
        "lake/version": 1,
        "data_version": "1",
        "columns": ["id", "name"],
        "lake/first_error": first_error,
    }
    errors = [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.ERROR]
    assert any(first_error in message for message in errors)  # the run's log says it in red
    assert not passed
    assert failed == "- " + markdown_text(f"{bad}: column id: 'x' is not a valid BIGINT")
    described = properties(lake, "DESC PIPE p")
    assert described["last_error"] == f"{bad}: column id: 'x' is not a valid BIGINT"
    assert described["on_load_failure"] == (
        "the file stays in the volume and is loaded again only once it changes"
    )
    assert tick(defs, instance).skip_reason.skip_message == "no new files"  # waits for a change

    put(volume, "bad.csv", "3,c\n4,d\n")
    run_key(tick(defs, instance))
    metadata, passed, failed = materialized(job.execute_in_process(instance=instance))
    assert metadata == {
        "rows_loaded": 2,
        "rows_rejected": 0,
        "files_loaded": 1,
        "files_failed": 0,
        "files_skipped_changed": 0,
        "files_purged": 1,
        "dagster/row_count": 4,
        "lake/version": 2,
        "data_version": "2",
        "columns": ["id", "name"],
    }
    assert passed
    assert failed == "none"
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,), (4,)]
    assert files(volume) == []

    # A run that loads nothing keeps the data version: what reads the table stays fresh.
    metadata, passed, _ = materialized(job.execute_in_process(instance=instance))
    assert (metadata["files_loaded"], metadata["data_version"], passed) == (0, "2", True)


def test_rejected_rows_are_counted_and_warned_of(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(f"CREATE TABLE t (id BIGINT, name STRING); {PIPE} ON_ERROR = 'SKIP_FILE_50%'")
    put(volume, "a.csv", "1,a\nx,b\n3,c\n")
    job = build_definitions(lake.settings).resolve_job_def("ingest_t_job")
    result = job.execute_in_process(instance=instance)
    (event,) = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert (metadata["rows_loaded"].value, metadata["rows_rejected"].value) == (2, 1)
    assert metadata["files_loaded"].value == 1
    (check,) = result.get_asset_check_evaluations()
    assert (check.passed, check.severity) == (False, AssetCheckSeverity.WARN)
    assert check.description == "1 row(s) rejected: `SELECT * FROM rejected_rows('t')`"
    assert rows(lake, "SELECT row_number, column_name FROM rejected_rows('t')") == [(2, "id")]
    described = properties(lake, "DESC PIPE p")
    assert (described["on_error"], described["rows_rejected"]) == ("'SKIP_FILE_50%'", 1)
    assert described["on_load_failure"] == (
        "a file with 50 % bad records or more stays in the volume and is loaded again only once "
        "it changes; below that its good records load and its bad records go to "
        "rejected_rows('t')"
    )


def test_a_run_for_one_pipe_leaves_a_paused_pipe_alone(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    web = local_volume(lake, tmp_path / "web", "web_vol")
    shop = local_volume(lake, tmp_path / "shop", "shop_vol")
    lake.sql(
        "CREATE TABLE t (id BIGINT, name STRING);"
        "CREATE PIPE web_pipe AS COPY INTO t FROM VOLUME web_vol USING CSV PURGE = TRUE;"
        "CREATE PIPE shop_pipe AS COPY INTO t FROM VOLUME shop_vol USING CSV PURGE = TRUE;"
        "ALTER PIPE shop_pipe SET PIPE_EXECUTION_PAUSED = TRUE"
    )
    put(web, "w.csv", "1,web\n")
    put(shop, "s.csv", "2,shop\n")
    defs = build_definitions(lake.settings)
    assert isinstance(tick(defs, instance, "shop_pipe"), SkipReason)
    run_key(tick(defs, instance, "web_pipe"))
    assert defs.resolve_job_def("ingest_t_job").execute_in_process(instance=instance).success
    assert rows(lake, "SELECT id FROM t") == [(1,)]
    assert files(shop) == ["s.csv"]


def test_a_piped_tables_expectations_are_checks_its_ingestion_runs(home: Home) -> None:
    expectation = Expectation("named", "name IS NOT NULL", columns=("name",))
    for table in ("t", "plain"):
        home.lake.catalog.update(
            TableEntry, table, lambda entry: replace(entry, expectations=(expectation,))
        )
    defs = build_definitions(home.settings)
    graph = defs.resolve_asset_graph()
    # The pipe's asset runs t's check; plain's, written by SQL only, is a check of its own.
    assert graph.get(AssetKey("t")).check_keys == {
        AssetCheckKey(AssetKey("t"), FILES_CHECK),
        AssetCheckKey(AssetKey("t"), "named"),
    }
    assert graph.get(AssetKey("plain")).check_keys == {AssetCheckKey(AssetKey("plain"), "named")}


def test_the_ingestion_run_evaluates_the_tables_expectations(
    lake: LakeSession, tmp_path: Path, instance: DagsterInstance
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(
        "CREATE TABLE t (id BIGINT, name STRING, "
        f"CONSTRAINT named EXPECT (name <> 'b') ON VIOLATION DROP ROW); {PIPE}"
    )
    put(volume, "a.csv", "1,a\n2,b\n")
    result = (
        build_definitions(lake.settings)
        .resolve_job_def("ingest_t_job")
        .execute_in_process(instance=instance)
    )
    (event,) = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["lake/expectations"].value == {"named": [1, 1]}
    assert metadata["dagster/row_count"].value == 1
    named = next(c for c in result.get_asset_check_evaluations() if c.check_name == "named")
    assert (named.passed, named.severity, named.metadata["failed"].value) == (
        False,
        AssetCheckSeverity.ERROR,
        1,
    )
    assert rows(lake, "SELECT id, expectation FROM quarantined_rows('t')") == [(2, "named")]
