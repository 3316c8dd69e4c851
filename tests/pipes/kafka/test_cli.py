"""A Kafka pipe driven by `lake sql` as users run it, one process per statement, on the real
broker: the first REFRESH after CREATE PIPE reads the group's committed offsets, which killed
the process (SIGSEGV, no output, nothing committed) while the broker's group coordinator was
not ready."""

from __future__ import annotations

from collections import Counter

from confluent_kafka import Producer

from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.ledger import BatchState
from lake_assets.session import LakeSession
from resources.kafka_broker import Broker
from tests.kafka_server import new_topic, produce
from tests.pipes.kafka.test_kill import create_pipe, loaded, messages
from tests.test_cli import lake as lake_cli


def test_the_first_refresh_in_its_own_process_loads_the_batch(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    create_pipe(lake, kafka_broker.bootstrap, topic)
    sent = produce(Producer({"bootstrap.servers": kafka_broker.bootstrap}), topic, messages("m", 6))

    refreshed = lake_cli(lake.settings.lake_home, "sql", "-e", "ALTER PIPE p REFRESH")

    assert refreshed.returncode == 0, (refreshed.returncode, refreshed.stderr[-3000:])
    assert "pipe p: batch 1 committed at version 1: 6 rows" in refreshed.stdout
    assert loaded(lake) == Counter(sent)
    (batch,) = ledger.batches(lake.catalog, "p")
    assert (batch.state, batch.start, batch.end) == (
        BatchState.COMMITTED,
        {0: 0, 1: 0},
        {0: 3, 1: 3},
    )
