"""A real Apache Kafka broker for tests (`resources.kafka_broker`), one per test session; and
librdkafka's mock cluster, for the answers a real broker gives only at moments no test can pick."""

from __future__ import annotations

import ctypes
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import confluent_kafka
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


# Kafka's API key of the request that reads a group's committed offsets.
OFFSET_FETCH = 9
_PRODUCER = 0  # rd_kafka_type_t: the handle the mock cluster hangs on


def _librdkafka() -> ctypes.CDLL:
    """The librdkafka confluent-kafka's wheel ships and loaded (its mock cluster is built in)."""
    libs = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    lib = ctypes.CDLL(str(next(libs.glob("librdkafka*.so*"))))
    pointer, text = ctypes.c_void_p, ctypes.c_char_p
    lib.rd_kafka_conf_new.restype = pointer
    lib.rd_kafka_conf_set.argtypes = [pointer, text, text, text, ctypes.c_size_t]
    lib.rd_kafka_new.restype = pointer
    lib.rd_kafka_new.argtypes = [ctypes.c_int, pointer, text, ctypes.c_size_t]
    lib.rd_kafka_destroy.argtypes = [pointer]
    lib.rd_kafka_mock_cluster_new.restype = pointer
    lib.rd_kafka_mock_cluster_new.argtypes = [pointer, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [pointer]
    lib.rd_kafka_mock_cluster_bootstraps.restype = text
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [pointer]
    lib.rd_kafka_mock_topic_create.argtypes = [pointer, text, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [
        pointer,
        ctypes.c_int16,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_int),
    ]
    return lib


class MockCluster:
    """librdkafka's mock Kafka cluster (its own test facility) of one broker, in this process:
    it answers the next requests of a kind with the errors it is told to."""

    def __init__(self) -> None:
        self._lib = _librdkafka()
        conf = self._lib.rd_kafka_conf_new()
        reason = ctypes.create_string_buffer(512)
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", reason, len(reason))
        self._handle = self._lib.rd_kafka_new(_PRODUCER, conf, reason, len(reason))
        assert self._handle, reason.value.decode()
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._handle, 1)
        self.bootstrap: str = self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        assert (
            self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1) == 0
        )

    def fail_next(self, api_key: int, *errors: int) -> None:
        """The next requests with `api_key` are answered with `errors`, one each, in order."""
        codes = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(
            self._cluster, api_key, len(errors), codes
        )

    def close(self) -> None:
        self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
        self._lib.rd_kafka_destroy(self._handle)
