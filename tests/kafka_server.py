"""A real Apache Kafka broker for tests (`resources.kafka_broker`), one per test session."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

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
