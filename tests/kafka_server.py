"""A real Apache Kafka broker for tests (`resources.kafka_broker`), one per test session."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lake_assets.core.settings import LakeSettings
from resources.kafka_broker import Broker, spawn_broker


def kafka_broker_fixture(scope: str = "session") -> Callable[..., Iterator[Broker]]:
    """A pytest fixture yielding a running broker (`.bootstrap` for clients) that lives for
    `scope`; only the tests that ask for it start its JVM."""

    @pytest.fixture(scope=scope)
    def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
        home = tmp_path_factory.mktemp("kafka")
        broker = spawn_broker(LakeSettings.from_env().jars_dir, home / "data", home / "broker.log")
        yield broker
        broker.stop()

    return kafka_broker


Row = tuple[int, int, str]


def new_topic(bootstrap: str, partitions: int = 2) -> str:
    topic = f"t-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)], request_timeout=30)
    futures[topic].result(timeout=30)
    return topic


def produce(producer: Producer, topic: str, messages: list[tuple[int, str]]) -> list[Row]:
    """(partition, offset, value) of each message, as the broker acknowledged it."""
    delivered: list[Row] = []

    def acknowledged(error: object, message: Message) -> None:
        assert error is None, error
        delivered.append((message.partition(), message.offset(), message.value().decode()))

    for partition, value in messages:
        producer.produce(topic, value=value.encode(), partition=partition, on_delivery=acknowledged)
    assert producer.flush(30) == 0
    return delivered
