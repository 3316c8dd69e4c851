"""The session's real Kafka broker (`kafka_broker`): clients produce and consume through it, and
Spark's Kafka source reads explicit offset ranges from it, as Kafka pipes will."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pyspark
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from resources import kafka_broker as kafka_broker_module
from resources.jvm import SPARK_KAFKA, fetch_jars
from resources.kafka_broker import Broker, cluster_id_of, new_cluster_id, spawn_broker
from resources.spark_server import free_port
from tests.kafka_server import Row, new_topic, produce


def artifact(jar: str) -> str:
    """A jar's name without its version: spark-sql-kafka-0-10_2.13-4.2.0.jar is spark-sql-kafka."""
    return re.sub(r"-\d[\w.-]*\.jar$", "", jar)


def consume(
    bootstrap: str, topic: str, count: int, isolation: str = "read_uncommitted"
) -> list[Row]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([topic])
    rows: list[Row] = []
    deadline = time.monotonic() + 30
    try:
        while len(rows) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                rows.append((message.partition(), message.offset(), message.value().decode()))
    finally:
        consumer.close()
    return sorted(rows)


def spark_rows(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    start: dict[int, int],
    end: dict[int, int],
    isolation: str = "read_uncommitted",
) -> list[Row]:
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.isolation.level", isolation)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {str(p): o for p, o in start.items()}}))
        .option("endingOffsets", json.dumps({topic: {str(p): o for p, o in end.items()}}))
        .load()
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
    )
    return sorted((row.partition, row.offset, row.value) for row in frame.collect())


def test_messages_produced_to_a_new_topic_are_consumed_back(kafka_broker: Broker) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    delivered = produce(producer, topic, [(i % 2, f"m{i}") for i in range(6)])
    assert sorted(delivered) == [
        (0, 0, "m0"),
        (0, 1, "m2"),
        (0, 2, "m4"),
        (1, 0, "m1"),
        (1, 1, "m3"),
        (1, 2, "m5"),
    ]
    assert consume(kafka_broker.bootstrap, topic, 6) == sorted(delivered)


def test_spark_reads_an_explicit_offset_range(kafka_broker: Broker, spark: SparkSession) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    produce(producer, topic, [(0, f"a{i}") for i in range(5)] + [(1, f"b{i}") for i in range(3)])
    rows = spark_rows(spark, kafka_broker.bootstrap, topic, start={0: 1, 1: 0}, end={0: 4, 1: 2})
    assert rows == [(0, 1, "a1"), (0, 2, "a2"), (0, 3, "a3"), (1, 0, "b0"), (1, 1, "b1")]


def test_read_committed_skips_aborted_transactions(
    kafka_broker: Broker, spark: SparkSession
) -> None:
    topic = new_topic(kafka_broker.bootstrap, partitions=1)
    producer = Producer(
        {"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": f"tx-{topic}"}
    )
    producer.init_transactions(30)
    for values, commit in ((["a", "b"], True), (["c"], False), (["d"], True)):
        producer.begin_transaction()
        produce(producer, topic, [(0, value) for value in values])
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    # Each transaction ends with a control record: a, b, commit, c, abort, d, commit.
    committed = [(0, 0, "a"), (0, 1, "b"), (0, 5, "d")]
    assert consume(kafka_broker.bootstrap, topic, 3, "read_committed") == committed
    whole = ({0: 0}, {0: 7})
    assert spark_rows(spark, kafka_broker.bootstrap, topic, *whole, "read_committed") == committed
    assert spark_rows(spark, kafka_broker.bootstrap, topic, *whole) == [
        (0, 0, "a"),
        (0, 1, "b"),
        (0, 3, "c"),
        (0, 5, "d"),
    ]


def test_a_second_broker_on_a_taken_port_is_refused(kafka_broker: Broker, tmp_path: Path) -> None:
    port = int(kafka_broker.bootstrap.rsplit(":", 1)[1])
    with pytest.raises(LakeError, match=f"port {port} on 127.0.0.1 is already in use"):
        spawn_broker(LakeSettings.from_env().jars_dir, tmp_path / "data", tmp_path / "log", port)


def test_spark_gets_the_kafka_source_without_duplicating_pysparks_own_jars() -> None:
    jars = fetch_jars(SPARK_KAFKA, LakeSettings.from_env().jars_dir)
    assert {artifact(jar.name) for jar in jars} == {
        "commons-pool2",
        "kafka-clients",
        "spark-sql-kafka",
        "spark-token-provider-kafka",
    }
    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    assert {artifact(jar.name) for jar in jars}.isdisjoint(
        artifact(jar.name) for jar in pyspark_jars.glob("*.jar")
    )


def test_the_broker_logs_through_log4j2_to_its_console_log(kafka_broker: Broker) -> None:
    assert "Kafka Server started" in kafka_broker.log.read_text()


def test_a_broker_starts_again_on_other_ports_and_takes_any_cluster_id(
    kafka_broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its first pick is a port another broker holds, and its cluster id starts with '-' (one
    in 64 random ids does): it must neither take that broker for itself nor read the id as a
    flag of Kafka's storage tool."""
    taken = int(kafka_broker.bootstrap.rsplit(":", 1)[1])
    picks = iter([taken])
    monkeypatch.setattr(kafka_broker_module, "free_port", lambda: next(picks, None) or free_port())
    cluster_id = "-" + new_cluster_id()[1:]
    monkeypatch.setattr(kafka_broker_module, "new_cluster_id", lambda: cluster_id)
    broker = spawn_broker(LakeSettings.from_env().jars_dir, tmp_path / "data", tmp_path / "log")
    try:
        assert broker.bootstrap != kafka_broker.bootstrap
        assert "Address already in use" in broker.log.read_text()  # the first try could not bind
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=30)
        assert metadata.cluster_id == cluster_id
        assert cluster_id_of(tmp_path / "data") == cluster_id
    finally:
        broker.stop()
