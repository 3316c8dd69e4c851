"""A Kafka pipe over a transactional producer on a real broker (ALTER PIPE … REFRESH in-process):
it reads read_committed by default, so committed messages load and aborted ones never do; the
offsets taken by aborted messages and transaction markers are gaps a batch steps over, never a
stall; and an open transaction holds the pipe at its first offset until it ends."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from lake_assets.pipes.kafka import ledger
from lake_assets.session import LakeSession
from resources.kafka import KafkaAdmin
from resources.kafka_broker import Broker
from tests.ingest_helpers import message
from tests.kafka_server import Row, new_topic, produce
from tests.pipes.kafka.test_kill import (
    assert_contiguous,
    assert_exactly_once,
    create_pipe,
    drain,
    messages,
)

TIMEOUT_SECONDS = 30


def transactional(bootstrap: str) -> Producer:
    """A producer with its own transactional.id, its transactions initialized."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4()}"})
    producer.init_transactions(TIMEOUT_SECONDS)
    return producer


def in_transaction(
    producer: Producer, topic: str, values: list[tuple[int, str]], commit: bool
) -> list[Row]:
    """Produce `values` in one transaction, then commit or abort it; what the broker acked."""
    producer.begin_transaction()
    delivered = produce(producer, topic, values)
    if commit:
        producer.commit_transaction(TIMEOUT_SECONDS)
    else:
        producer.abort_transaction(TIMEOUT_SECONDS)
    return delivered


def test_committed_transactions_load_aborted_ones_never_and_markers_do_not_stall(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = new_topic(bootstrap)
    create_pipe(lake, bootstrap, topic)
    producer = transactional(bootstrap)
    sent = in_transaction(producer, topic, messages("committed1", 4), commit=True)
    in_transaction(producer, topic, messages("aborted1", 4), commit=False)
    sent += in_transaction(producer, topic, messages("committed2", 3), commit=True)
    plain = Producer({"bootstrap.servers": bootstrap})
    sent += produce(plain, topic, messages("plain", 2))

    drain(lake)
    assert_exactly_once(lake, sent)
    batches = assert_contiguous(lake, bootstrap, topic)
    # Aborted messages and the three markers take offsets: the batch spans more than it loads.
    assert sum(b.end[p] - b.start[p] for b in batches for p in b.start) == 4 + 4 + 3 + 2 + 3 * 2
    assert sum(b.rows or 0 for b in batches) == len(sent)

    # A batch of nothing but an aborted transaction and its markers loads no row and is
    # committed like any other, so the pipe goes on past it.
    in_transaction(producer, topic, messages("aborted2", 2), commit=False)
    said = drain(lake)
    assert len(said) == 2, said
    assert "rows from offsets" in said[0]
    assert_exactly_once(lake, sent)
    sent += in_transaction(producer, topic, messages("committed3", 2), commit=True)
    drain(lake)
    assert_exactly_once(lake, sent)
    batches = assert_contiguous(lake, bootstrap, topic)
    assert [b.rows for b in batches][-2:] == [0, 2]


def test_an_open_transaction_holds_the_pipe_until_it_ends(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = new_topic(bootstrap, partitions=1)
    create_pipe(lake, bootstrap, topic)
    producer = transactional(bootstrap)
    plain = Producer({"bootstrap.servers": bootstrap})
    sent = produce(plain, topic, [(0, "before")])
    producer.begin_transaction()
    pending = produce(producer, topic, [(0, "in-transaction-1"), (0, "in-transaction-2")])
    after = produce(plain, topic, [(0, "after")])

    # Read committed, the topic ends where the open transaction begins.
    admin = KafkaAdmin(bootstrap, {})
    assert admin.offsets(admin.topic(topic), "latest") == {0: 1}
    drain(lake)
    assert_exactly_once(lake, sent)
    (batch,) = ledger.batches(lake.catalog, "p")
    assert batch.end == {0: 1}

    producer.commit_transaction(TIMEOUT_SECONDS)
    sent += pending + after
    drain(lake)
    assert_exactly_once(lake, sent)
    assert_contiguous(lake, bootstrap, topic)
    assert message(lake, "ALTER PIPE p REFRESH") == "pipe p: no new messages"
