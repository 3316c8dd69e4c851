"""A Kafka topic seen through confluent-kafka's admin client: its id, its partitions and their
offsets, and a consumer group's committed offsets (read by a consumer of that group, see
`KafkaAdmin.committed`). No Spark: sensors plan batches with it.

Client settings come as READ_KAFKA's map gives them, in the Java client's names (what Spark's
Kafka source takes); `librdkafka_settings` turns SASL's JAAS line into librdkafka's names."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from lake_assets.core.errors import LakeError
from resources.secrets import ENV, unseal

# How long one admin request may take before the broker counts as unreachable.
REQUEST_TIMEOUT_SECONDS = 10.0
_JAAS_FIELD = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_PASSING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.REQUEST_TIMED_OUT,
}
# Settings only the Java client reads: librdkafka refuses unknown names.
_JAVA_ONLY = ("sasl.jaas.config", "isolation.level")


class Isolation(StrEnum):
    """Which messages count: read_committed skips aborted transactions (the default)."""

    READ_COMMITTED = "read_committed"
    READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True)
class Topic:
    """A topic as it is now: `id` changes when it is deleted and created again."""

    name: str
    id: str
    partitions: tuple[int, ...]


def resolved(options: Mapping[str, str], lake_home: Path) -> dict[str, str]:
    """The settings with each 'env:VAR' replaced by its value, for the client only."""
    return {
        key: (unseal(value, lake_home) or "") if value.startswith(ENV) else value
        for key, value in options.items()
    }


def isolation(options: Mapping[str, str]) -> Isolation:
    value = options.get("isolation.level", Isolation.READ_COMMITTED).lower()
    if value not in Isolation._value2member_map_:
        raise LakeError(
            f"isolation.level '{value}' is not a Kafka isolation level",
            "use 'read_committed' (the default) or 'read_uncommitted'",
        )
    return Isolation(value)


def librdkafka_settings(bootstrap: str, options: Mapping[str, str]) -> dict[str, Any]:
    """The Java client's settings in librdkafka's names (SASL user and password from JAAS)."""
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap}
    settings.update({k: v for k, v in options.items() if k not in _JAVA_ONLY})
    found = _JAAS_FIELD.findall(options.get("sasl.jaas.config", ""))
    fields = {key: re.sub(r"\\(.)", r"\1", value) for key, value in found}  # JAAS escapes
    if "username" in fields:
        settings["sasl.username"] = fields["username"]
    if "password" in fields:
        settings["sasl.password"] = fields["password"]
    return settings


def _passing(error: KafkaError) -> bool:
    """Whether the broker is only not ready yet: a coordinator or leader still being chosen
    or loaded (librdkafka reports some of these inside another error, hence the text)."""
    return (
        error.retriable() or error.code() in _PASSING or "load in progress" in error.str().lower()
    )


def _answer(future: Future) -> Any:
    return future.result(timeout=REQUEST_TIMEOUT_SECONDS + 5)


def _result(ask: Callable[[], Any], bootstrap: str) -> Any:
    """The answer to a request, asked again while the broker says to retry (a group coordinator
    still loading, a leader moving) within REQUEST_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + REQUEST_TIMEOUT_SECONDS
    while True:
        try:
            return ask()
        except KafkaException as error:
            kafka_error: KafkaError = error.args[0]
            if not _passing(kafka_error) or time.monotonic() > deadline:
                raise _lake_error(kafka_error, bootstrap) from None
            time.sleep(0.2)
        except TimeoutError:
            raise _unreachable(bootstrap) from None


def _unreachable(bootstrap: str) -> LakeError:
    return LakeError(
        f"Kafka at {bootstrap} did not answer within {REQUEST_TIMEOUT_SECONDS:.0f} s",
        "check that the broker runs and the bootstrap address and security settings are right",
    )


def _lake_error(error: KafkaError, bootstrap: str) -> LakeError:
    if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return LakeError(
            f"Kafka at {bootstrap}: {error.str()}",
            "check the topic's name, or create the topic first",
        )
    if error.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
        return _unreachable(bootstrap)
    return LakeError(f"Kafka at {bootstrap}: {error.str()}", "check the broker and the settings")


class KafkaAdmin:
    """One admin client per use: a sensor tick or a run opens it, asks, and drops it."""

    def __init__(self, bootstrap: str, options: Mapping[str, str]) -> None:
        self.bootstrap = bootstrap
        settings = librdkafka_settings(bootstrap, options)
        settings["socket.timeout.ms"] = int(REQUEST_TIMEOUT_SECONDS * 1000)
        self._settings = settings
        try:
            self._admin = AdminClient(settings)
        except KafkaException as error:
            raise LakeError(
                f"Kafka client settings are not valid: {error.args[0].str()}",
                "fix or remove the setting in READ_KAFKA's map(…)",
            ) from None

    def topic(self, name: str) -> Topic:
        """The topic's id and partitions; a missing topic is an error that says so."""
        description = _result(
            lambda: _answer(
                self._admin.describe_topics(
                    TopicCollection([name]), request_timeout=REQUEST_TIMEOUT_SECONDS
                )[name]
            ),
            self.bootstrap,
        )
        partitions = tuple(sorted(p.id for p in description.partitions))
        return Topic(name, str(description.topic_id), partitions)

    def offsets(
        self, topic: Topic, spec: str | int, level: Isolation = Isolation.READ_COMMITTED
    ) -> dict[int, int]:
        """Each partition's offset: 'earliest', 'latest' (read_committed: the last stable
        offset), or the first at or after a time in epoch milliseconds (-1: none yet)."""
        if spec == "earliest":
            wanted = OffsetSpec.earliest()
        elif spec == "latest":
            wanted = OffsetSpec.latest()
        else:
            wanted = OffsetSpec.for_timestamp(int(spec))
        partitions = [TopicPartition(topic.name, p) for p in topic.partitions]
        level_of = (
            IsolationLevel.READ_COMMITTED
            if level is Isolation.READ_COMMITTED
            else IsolationLevel.READ_UNCOMMITTED
        )

        def ask() -> dict[int, int]:
            futures = self._admin.list_offsets(
                dict.fromkeys(partitions, wanted),
                isolation_level=level_of,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
            return {tp.partition: _answer(future).offset for tp, future in futures.items()}

        return _result(ask, self.bootstrap)

    def committed(self, group: str, topic: Topic) -> dict[int, int]:
        """The group's committed offset per partition (absent: none), asked by a consumer of the
        group that never joins it. Not the admin client's request: when the broker answers it
        'not coordinator' (a fresh broker's group coordinator still starting, or one moving),
        librdkafka looks the coordinator up again through the client's own consumer group, which
        an admin client does not have, and the whole process dies of SIGSEGV."""
        wanted = [TopicPartition(topic.name, p) for p in topic.partitions]
        consumer = Consumer({**self._settings, "group.id": group, "enable.auto.commit": False})

        def ask() -> list[TopicPartition]:
            answer = consumer.committed(wanted, timeout=REQUEST_TIMEOUT_SECONDS)
            failed = next((tp.error for tp in answer if tp.error is not None), None)
            if failed is not None:
                raise KafkaException(failed)
            return answer

        try:
            answer = _result(ask, self.bootstrap)
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in answer if tp.offset >= 0}

    def commit(self, group: str, topic: str, offsets: Mapping[int, int]) -> None:
        """Set the group's offsets, for lag tools: the pipe's own record is the truth."""
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, p, o) for p, o in offsets.items()]
        )
        _result(
            lambda: _answer(
                self._admin.alter_consumer_group_offsets(
                    [request], request_timeout=REQUEST_TIMEOUT_SECONDS
                )[group]
            ),
            self.bootstrap,
        )
