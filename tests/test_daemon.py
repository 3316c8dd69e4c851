"""End to end through the real Dagster daemon and a Spark Connect server, as `make dev` runs them:
a file lands, the pipe's sensor loads it (by its header's names, its bad row kept aside) and its
run refreshes the dynamic table; objects created or dropped while the daemon runs take effect
with no reload; and a TARGET_LAG is kept and shown as Dagster's freshness."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from dagster import (
    AssetCheckKey,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    RunsFilter,
)

from lake_assets.core.catalog import Catalog
from lake_assets.daemon import ROOT, spawn_daemon
from lake_assets.dynamic_tables.defs import AUTOMATION_SENSOR
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import REFRESHES
from lake_assets.pipes.load_records import load_history
from lake_assets.session import LakeSession
from lake_assets.tasks.kind import TASKS_SENSOR
from resources.spark_server import free_port, server_url, spawn_server, stop
from tests.ingest_helpers import files, local_volume, put, rows
from tests.pipes.test_defs_staleness import stale

# Generous: the run processes share two cores with the rest of the suite.
PATIENCE_SECONDS = 600
# The daemon looks at each sensor every ~5 s: a sensor this long without a tick is gone.
QUIET_SECONDS = 25
UNFINISHED = RunsFilter(
    statuses=[
        DagsterRunStatus.QUEUED,
        DagsterRunStatus.NOT_STARTED,
        DagsterRunStatus.STARTING,
        DagsterRunStatus.STARTED,
        DagsterRunStatus.CANCELING,
    ]
)


def failed_steps(instance: DagsterInstance) -> list[str]:
    """Each failed run's step errors: a test waiting on the daemon stops at the first one."""
    return [
        f"run {run.run_id} ({run.job_name}): {event.dagster_event.step_failure_data.error.message}"
        for run in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
        for event in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_FAILURE)
        if event.dagster_event
        and event.dagster_event.step_failure_data
        and event.dagster_event.step_failure_data.error
    ]


@dataclass
class Running:
    """A daemon and its code server on one test's LAKE_HOME, and where they log."""

    dagster_home: Path
    logs: list[Path]

    def wait_until(self, what: str, done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + PATIENCE_SECONDS
        while not done():
            assert time.monotonic() < deadline, f"{what} did not happen; logs:\n" + "\n".join(
                f"--- {log}\n{log.read_text()}" for log in self.logs if log.exists()
            )
            time.sleep(1)


@pytest.fixture(scope="module")
def spark_remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Spark Connect server for the module's daemons (runs name their Delta tables by path)."""
    home = tmp_path_factory.mktemp("connect")
    port = free_port()
    with (home / "server.log").open("wb") as log:
        server = spawn_server(port, {**os.environ, "LAKE_HOME": str(home)}, log)
    yield server_url(port)
    stop(server)


@contextmanager
def running_daemon(lake: LakeSession, tmp_path: Path, spark_remote: str) -> Iterator[Running]:
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", dagster_home)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "LAKE_HOME": str(lake.settings.lake_home),
        "LAKE_SPARK_REMOTE": spark_remote,
    }
    log = tmp_path / "daemon.log"
    with log.open("wb") as output:
        daemon = spawn_daemon(env, output)
    try:
        yield Running(dagster_home, [log, lake.settings.log_dir / "code-server.log"])
    finally:
        daemon.stop()


def tick_times(instance: DagsterInstance, sensor: str) -> list[float]:
    """When the daemon evaluated a sensor, as the instance recorded it."""
    return [
        tick.timestamp
        for state in instance.all_instigator_state()
        if state.instigator_name == sensor
        for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id)
    ]


# What Dagster's sensor page says of a tick that requested nothing and gave no reason.
DAGSTER_NO_REASON = "Sensor function returned an empty result"


def skipped_without_a_reason(instance: DagsterInstance) -> list[str]:
    """Ticks of this project's sensors that requested nothing and do not say why (the
    automation sensors' ticks show their evaluations instead)."""
    return [
        f"{state.instigator_name} at {tick.timestamp}"
        for state in instance.all_instigator_state()
        if state.instigator_name not in (AUTOMATION_SENSOR, TASKS_SENSOR)
        for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id)
        if tick.status.value == "SKIPPED" and tick.skip_reason in (None, "", DAGSTER_NO_REASON)
    ]


def loaded(catalog: Catalog, table: str, name: str) -> bool:
    return any(
        r.status.loaded and r.file_path.endswith(f"/{name}") for r in load_history(catalog, table)
    )


def refreshed_upstream(catalog: Catalog, name: str) -> bool:
    return any(
        r.refresh_trigger == "UPSTREAM" and r.refresh_mode == "INCREMENTAL"
        for r in REFRESHES.newest_first(catalog, name)
    )


def test_a_landed_file_is_loaded_and_its_summary_refreshed_without_a_manual_step(
    lake: LakeSession, tmp_path: Path, spark_remote: str
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(
        "CREATE TABLE ods (id BIGINT, category STRING, amount DECIMAL(10,2));"
        "CREATE PIPE p POLL_INTERVAL = 2 AS COPY INTO ods FROM VOLUME v USING CSV "
        "OPTIONS('header' = 'true') MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = CONTINUE "
        "PURGE = TRUE;"
        "CREATE DYNAMIC TABLE summary AS "
        "SELECT category, COUNT(*) AS orders, SUM(amount) AS total FROM ods GROUP BY category"
    )
    catalog = lake.catalog
    with running_daemon(lake, tmp_path, spark_remote) as running:
        put(
            volume,
            "day1.csv",
            "Amount,ID,Category\n10.00,1,Electronics\n5.50,2,Sports\nlots,9,Toys\n1.25,3,Sports\n",
        )
        running.wait_until("the pipe's load", lambda: loaded(catalog, "ods", "day1.csv"))
        running.wait_until("the upstream refresh", lambda: refreshed_upstream(catalog, "summary"))
    assert rows(lake, "SELECT category, orders, total FROM summary ORDER BY category") == [
        ("Electronics", 1, Decimal("10.00")),
        ("Sports", 2, Decimal("6.75")),
    ]
    assert rows(lake, "SELECT row_number, column_name, raw_record FROM rejected_rows('ods')") == [
        (4, "amount", "lots,9,Toys")
    ]
    assert [r.rows_rejected for r in load_history(catalog, "ods")] == [1]
    assert list(volume.iterdir()) == []  # purged after the commit


def test_objects_created_and_dropped_while_the_daemon_runs_take_effect_without_a_reload(
    lake: LakeSession, tmp_path: Path, spark_remote: str
) -> None:
    catalog = lake.catalog
    with (
        running_daemon(lake, tmp_path, spark_remote) as running,  # the catalog is empty
        DagsterInstance.from_config(str(running.dagster_home)) as instance,
    ):
        volume = local_volume(lake, tmp_path / "incoming")
        lake.sql("CREATE TABLE ods (id BIGINT, category STRING, amount DECIMAL(10,2))")
        created = time.time()
        lake.sql(
            "CREATE PIPE p POLL_INTERVAL = 2 AS COPY INTO ods FROM VOLUME v USING CSV PURGE = TRUE"
        )
        running.wait_until("the new pipe's first tick", lambda: tick_times(instance, "p"))
        first = min(tick_times(instance, "p"))
        print(f"CREATE PIPE → its sensor's first tick: {first - created:.1f} s")
        landed = time.time()
        put(volume, "day1.csv", "1,Electronics,10.00\n2,Sports,5.50\n3,Sports,1.25\n")
        running.wait_until("the new pipe's load", lambda: loaded(catalog, "ods", "day1.csv"))
        print(f"file landed → loaded by the new pipe: {time.time() - landed:.1f} s")
        running.wait_until("the load run's end", lambda: not instance.get_runs(UNFINISHED))
        assert not stale(instance, "ods", "v")  # loaded and purged: nothing left to load

        lake.sql(
            "CREATE DYNAMIC TABLE summary AS "
            "SELECT category, COUNT(*) AS orders, SUM(amount) AS total FROM ods GROUP BY category"
        )
        created = time.time()
        running.wait_until(
            "the automation sensor's first tick", lambda: tick_times(instance, AUTOMATION_SENSOR)
        )
        first = min(tick_times(instance, AUTOMATION_SENSOR))
        print(f"CREATE DYNAMIC TABLE → the automation sensor's first tick: {first - created:.1f} s")
        put(volume, "day2.csv", "4,Sports,2.00\n")
        running.wait_until("the upstream refresh", lambda: refreshed_upstream(catalog, "summary"))

        lake.sql("DROP PIPE p")
        dropped = time.time()
        put(volume, "day3.csv", "5,Sports,3.00\n")
        running.wait_until(
            "the dropped pipe's sensor to stop ticking",
            lambda: time.time() - max(dropped, *tick_times(instance, "p")) > QUIET_SECONDS,
        )
        assert skipped_without_a_reason(instance) == []
    assert files(volume) == ["day3.csv"]
    assert not loaded(catalog, "ods", "day3.csv")
    assert rows(lake, "SELECT category, orders, total FROM summary ORDER BY category") == [
        ("Electronics", 1, Decimal("10.00")),
        ("Sports", 3, Decimal("8.75")),
    ]


def test_a_target_lag_is_kept_by_the_lag_sensor_and_shown_as_freshness(
    lake: LakeSession, tmp_path: Path, spark_remote: str
) -> None:
    """`totals` (TARGET_LAG 90 s) reads `cleaned` (DOWNSTREAM): two commits to `orders` are
    caught up by one refresh of `totals` within the target, `cleaned` refreshed first as part of
    it (and reported as an event of its asset), and Dagster's freshness says `totals` is fresh.
    Each table's expectation is a check of its asset, evaluated by that refresh: `cleaned`'s
    leaves the negative order out (in its quarantine), `totals`'s counts the total it warns of."""
    lake.sql(
        "CREATE TABLE orders (id BIGINT, amount DECIMAL(10,2)); INSERT INTO orders VALUES (1, 10);"
        "CREATE DYNAMIC TABLE cleaned (id, amount, CONSTRAINT positive EXPECT (amount > 0) ON "
        "VIOLATION DROP ROW) TARGET_LAG = '1 hour' AS SELECT id, amount FROM orders;"
        "CREATE DYNAMIC TABLE totals (n, total, CONSTRAINT small EXPECT (total < 15)) "
        "TARGET_LAG = '90 seconds' AS SELECT COUNT(*) AS n, SUM(amount) AS total FROM cleaned;"
        "ALTER DYNAMIC TABLE cleaned SET TARGET_LAG = DOWNSTREAM"
    )
    catalog = lake.catalog
    created = {name: len(REFRESHES.newest_first(catalog, name)) for name in ("cleaned", "totals")}
    with (
        running_daemon(lake, tmp_path, spark_remote) as running,
        DagsterInstance.from_config(str(running.dagster_home)) as instance,
    ):
        lake.sql("INSERT INTO orders VALUES (2, 5)")
        lake.sql("INSERT INTO orders VALUES (3, -1), (4, 2.5)")
        running.wait_until(
            "the refresh of totals", lambda: rows(lake, "SELECT n FROM totals") == [(3,)]
        )
        running.wait_until(
            "Dagster's freshness of totals",
            lambda: _freshness(instance, "totals") == "PASS",
        )
        # Over the refresh: cleaned kept 3 of its query's 4 rows; totals added one row, 17.50.
        running.wait_until(
            "the expectations' checks",
            lambda: {name: _verdict(instance, *name) for name in EXPECTED} == EXPECTED,
        )
        cleaned_event = instance.get_latest_materialization_event(AssetKey("cleaned"))
        assert failed_steps(instance) == []
    assert rows(lake, "SELECT id, amount FROM quarantined_rows('cleaned')") == [(3, Decimal(-1))]
    refreshes = REFRESHES.newest_first(catalog, "totals")[: -created["totals"]]
    committed = [r for r in refreshes if r.dt_version is not None]
    assert [r.refresh_trigger for r in committed] == ["SCHEDULED"]  # not one per commit
    # Requested at half the target (45 s after the first INSERT), committed within it.
    print(f"totals caught up {committed[0].lag_seconds:.1f} s after the first INSERT")
    assert 45 <= (committed[0].lag_seconds or 0) <= 90, committed[0]
    upstream = REFRESHES.newest_first(catalog, "cleaned")[: -created["cleaned"]]
    assert {r.refresh_trigger for r in upstream} == {"DOWNSTREAM"}
    assert cleaned_event is not None
    assert cleaned_event.asset_materialization is not None
    version = cleaned_event.asset_materialization.metadata["lake/version"].value
    assert version == catalog.get(DynamicTableEntry, "cleaned").version


EXPECTED = {("cleaned", "positive"): (False, 3, 1), ("totals", "small"): (False, 0, 1)}


def _verdict(instance: DagsterInstance, table: str, check: str) -> tuple[bool, int, int] | None:
    """The newest evaluation of a table's expectation check: passed, and its counts."""
    key = AssetCheckKey(AssetKey(table), check)
    found = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    event = found[0].event if found else None
    if event is None or event.dagster_event is None:
        return None
    evaluation = event.dagster_event.event_specific_data
    metadata = evaluation.metadata
    return evaluation.passed, metadata["passed"].value, metadata["failed"].value


def _freshness(instance: DagsterInstance, name: str) -> str | None:
    records = instance.get_freshness_state_records([AssetKey(name)])
    record = records.get(AssetKey(name))
    return record.freshness_state.value if record is not None else None
