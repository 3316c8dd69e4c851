"""The Kafka admin client's settings: READ_KAFKA's map in the Java client's names becomes
librdkafka's, with secrets resolved from the environment only for the client."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from resources.kafka import Isolation, isolation, librdkafka_settings, resolved

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="ingest" '
    'password="s3cr\\"et";'
)


def test_sasl_jaas_becomes_librdkafka_user_and_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_CONN_KAFKA_JAAS", JAAS)
    options = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "env:LAKE_CONN_KAFKA_JAAS",
        "isolation.level": "read_committed",
    }
    settings = librdkafka_settings("b:9092", resolved(options, Path("/nowhere")))
    assert settings == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "ingest",
        "sasl.password": 's3cr"et',
    }
    # the stored text keeps the reference
    assert options["sasl.jaas.config"] == "env:LAKE_CONN_KAFKA_JAAS"


def test_isolation_is_read_committed_unless_said_and_checked() -> None:
    assert isolation({}) is Isolation.READ_COMMITTED
    assert isolation({"isolation.level": "READ_UNCOMMITTED"}) is Isolation.READ_UNCOMMITTED
    with pytest.raises(LakeError, match="is not a Kafka isolation level"):
        isolation({"isolation.level": "dirty"})
