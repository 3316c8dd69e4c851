"""Kafka pipes driven by the real Dagster daemon (its pipe sensors and runs on a Spark Connect
server) on a real broker, no REFRESH anywhere: messages produced in rounds arrive exactly once by
themselves; a paused pipe loads nothing until resumed; and a broker stopped and started again
mid-stream (its own broker, same data directory and port; loaded by the daemon too, not by
REFRESH) loses nothing and loads nothing twice.

One daemon serves the module (it is expensive); each test has its own topic, table and pipe."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    RunsFilter,
)
from dagster._core.scheduler.instigation import InstigatorTick
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.pipes.kafka import ledger
from lake_assets.session import LakeSession
from resources.kafka_broker import Broker, spawn_broker
from tests import test_daemon
from tests.kafka_server import Row, new_topic, produce
from tests.pipes.kafka.test_kill import (
    assert_contiguous,
    assert_exactly_once,
    create_pipe,
    loaded,
    messages,
)
from tests.test_daemon import UNFINISHED, Running, running_daemon

# One Spark Connect server for the module's daemon, as tests/test_daemon.py starts it.
spark_remote = test_daemon.spark_remote
# Sensor ticks a paused pipe must skip before we believe it loads nothing.
PAUSED_TICKS = 3


@dataclass
class Lakehouse:
    """The module's lake, and the daemon running its pipes."""

    lake: LakeSession
    running: Running
    instance: DagsterInstance

    def wait_until_loaded(self, sent: list[Row], table: str) -> None:
        """Until the table holds as many rows as were sent, and no run is left to add more."""
        self.running.wait_until(
            f"{len(sent)} rows in {table}",
            lambda: sum(loaded(self.lake, table).values()) >= len(sent),
        )
        self.running.wait_until(
            "the runs' end", lambda: not self.instance.get_runs(UNFINISHED, limit=1)
        )

    def ticks(self, sensor: str, since: float) -> list[InstigatorTick]:
        """The sensor's finished ticks that began after `since`, newest first (one under way has
        no outcome yet)."""
        return [
            tick
            for state in self.instance.all_instigator_state()
            if state.instigator_name == sensor
            for tick in self.instance.get_ticks(state.instigator_origin_id, state.selector_id)
            if tick.timestamp > since and tick.is_completed
        ]


@pytest.fixture(scope="module")
def lakehouse(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, spark_remote: str
) -> Iterator[Lakehouse]:
    settings = LakeSettings(lake_home=tmp_path_factory.mktemp("lake"))
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    with (
        running_daemon(lake, tmp_path_factory.mktemp("daemon"), spark_remote) as running,
        DagsterInstance.from_config(str(running.dagster_home)) as instance,
    ):
        yield Lakehouse(lake, running, instance)


@contextmanager
def pipe_into(lake: LakeSession, bootstrap: str, topic: str, pipe: str) -> Iterator[str]:
    """A pipe into its own table `<pipe>_t`, both dropped afterwards, so that each test sees
    only its own pipe."""
    table = f"{pipe}_t"
    create_pipe(lake, bootstrap, topic, pipe=pipe, table=table)
    try:
        yield table
    finally:
        lake.sql(f"DROP PIPE {pipe}")
        lake.sql(f"DROP TABLE {table}")


def failed_runs(instance: DagsterInstance, table: str) -> int:
    failed = RunsFilter(job_name=f"ingest_{table}_job", statuses=[DagsterRunStatus.FAILURE])
    return len(instance.get_runs(failed))


def test_messages_produced_in_rounds_arrive_exactly_once_by_themselves(
    lakehouse: Lakehouse, kafka_broker: Broker
) -> None:
    lake, bootstrap = lakehouse.lake, kafka_broker.bootstrap
    topic = new_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    with pipe_into(lake, bootstrap, topic, "rounds") as table:
        sent = produce(producer, topic, messages("round1", 6))
        lakehouse.wait_until_loaded(sent, table)
        # Two rounds close together, then one more while their batches may be loading.
        sent += produce(producer, topic, messages("round2", 5))
        sent += produce(producer, topic, messages("round3", 3))
        time.sleep(1)
        sent += produce(producer, topic, messages("round4", 4))
        lakehouse.wait_until_loaded(sent, table)
        assert_exactly_once(lake, sent, table)
        assert_contiguous(lake, bootstrap, topic, "rounds")
        assert failed_runs(lakehouse.instance, table) == 0


def test_a_paused_pipe_loads_nothing_until_resumed(
    lakehouse: Lakehouse, kafka_broker: Broker
) -> None:
    lake, bootstrap = lakehouse.lake, kafka_broker.bootstrap
    topic = new_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    with pipe_into(lake, bootstrap, topic, "paused") as table:
        sent = produce(producer, topic, messages("running", 4))
        lakehouse.wait_until_loaded(sent, table)
        batches = ledger.batches(lake.catalog, "paused")

        lake.sql("ALTER PIPE paused SET PIPE_EXECUTION_PAUSED = TRUE")
        paused_at = time.time()
        held = produce(producer, topic, messages("while-paused", 6))
        lakehouse.running.wait_until(
            f"{PAUSED_TICKS} ticks of the paused pipe's sensor",
            lambda: len(lakehouse.ticks("paused", paused_at)) >= PAUSED_TICKS,
        )
        ticks = lakehouse.ticks("paused", paused_at)
        assert all("is PAUSED" in (tick.skip_reason or "") for tick in ticks), [
            tick.skip_reason for tick in ticks
        ]
        assert ledger.batches(lake.catalog, "paused") == batches
        assert loaded(lake, table).total() == len(sent)
        assert not lakehouse.instance.get_runs(UNFINISHED, limit=1)

        lake.sql("ALTER PIPE paused SET PIPE_EXECUTION_PAUSED = FALSE")
        sent += held
        lakehouse.wait_until_loaded(sent, table)
        assert_exactly_once(lake, sent, table)
        assert_contiguous(lake, bootstrap, topic, "paused")
        assert failed_runs(lakehouse.instance, table) == 0


def test_a_broker_restarted_mid_stream_loses_nothing_and_loads_nothing_twice(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    lake = lakehouse.lake
    jars, data, log = lake.settings.jars_dir, tmp_path / "data", tmp_path / "log"
    broker = spawn_broker(jars, data, log)  # on a port it picks again if it was taken meanwhile
    port = int(broker.bootstrap.rsplit(":", 1)[1])  # its clients know it there: it restarts there
    try:
        topic = new_topic(broker.bootstrap)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        with pipe_into(lake, broker.bootstrap, topic, "restart") as table:
            sent = produce(producer, topic, messages("first", 6))
            lakehouse.wait_until_loaded(sent, table)
            # Produced, then the broker goes away at once: the sensor may be planning its batch
            # or a run reading it.
            sent += produce(producer, topic, messages("second", 6))
            broker.stop()
            stopped_at = time.time()
            # The daemon lives through the outage: its sensor says the broker did not answer.
            lakehouse.running.wait_until(
                "a tick of the pipe's sensor that found the broker down",
                lambda: any(
                    broker.bootstrap in (tick.skip_reason or "")
                    for tick in lakehouse.ticks("restart", stopped_at)
                ),
            )
            broker = spawn_broker(jars, data, log, port)
            sent += produce(producer, topic, messages("third", 5))
            lakehouse.wait_until_loaded(sent, table)
            assert_exactly_once(lake, sent, table)
            assert_contiguous(lake, broker.bootstrap, topic, "restart")
    finally:
        broker.stop()


def test_the_code_location_loads_with_two_tables_fed_by_kafka_pipes(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    """No daemon: the code server the daemon reads fails the same way, and no sensor ticks."""
    for name in ("one", "two"):
        create_pipe(
            lake,
            kafka_broker.bootstrap,
            new_topic(kafka_broker.bootstrap),
            pipe=name,
            table=f"{name}_t",
        )
    repository = build_definitions(lake.settings).get_repository_def()
    assert {job.name for job in repository.get_all_jobs()} >= {
        "ingest_one_t_job",
        "ingest_two_t_job",
    }
