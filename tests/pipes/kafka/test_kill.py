"""Crash safety of a Kafka pipe on a real broker, real Spark and Delta: a `lake sql` process
running ALTER PIPE … REFRESH is SIGKILLed after its batch is planned, just before its commit and
just after it; more messages arrive; REFRESH then recovers. Every (partition, offset) produced
lands in the table exactly once, and the pipe's batches are all committed, each starting where
the one before ended."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest
from confluent_kafka import Producer

from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.batches import KAFKA_AFTER_COMMIT, KAFKA_BEFORE_COMMIT, KAFKA_PLANNED
from lake_assets.pipes.kafka.ledger import BatchState, KafkaBatch
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from resources.kafka import KafkaAdmin
from resources.kafka_broker import Broker
from tests.ingest_helpers import message, rows
from tests.kafka_server import Row, new_topic, produce
from tests.streams.test_kill import killed_at

PIPE = (
    "CREATE PIPE {pipe} BATCH_INTERVAL_IN_SECONDS = '2' AS COPY INTO {table} FROM ("
    "SELECT partition, offset, CAST(value AS STRING) AS v FROM TABLE(READ_KAFKA("
    "'{bootstrap}', '{topic}', '', '{group}', '', '', '', '', 'raw', 'raw', 0, map())))"
)
REFRESH = "ALTER PIPE p REFRESH"
# Enough REFRESHes to drain any test's topic: each loads everything up to the latest offsets.
MAX_REFRESHES = 20


def create_pipe(
    lake: LakeSession, bootstrap: str, topic: str, pipe: str = "p", table: str = "t"
) -> None:
    """Table `table` (partition, offset, v) fed by Kafka pipe `pipe` with its own group."""
    lake.sql(f"CREATE TABLE {table} (partition INT, offset BIGINT, v STRING)")
    lake.sql(
        PIPE.format(pipe=pipe, table=table, bootstrap=bootstrap, topic=topic, group=f"{pipe}_group")
    )


def messages(prefix: str, count: int) -> list[tuple[int, str]]:
    """`count` messages spread over partitions 0 and 1."""
    return [(i % 2, f"{prefix}-{i}") for i in range(count)]


def loaded(lake: LakeSession, table: str = "t") -> Counter[Row]:
    """Every row the table holds, counted: a row loaded twice counts 2."""
    return Counter(rows(lake, f"SELECT partition, offset, v FROM {table}"))


def drain(lake: LakeSession, pipe: str = "p") -> list[str]:
    """REFRESH until the pipe finds no new messages; what each REFRESH said."""
    said = []
    for _ in range(MAX_REFRESHES):
        said.append(message(lake, f"ALTER PIPE {pipe} REFRESH"))
        if said[-1] == f"pipe {pipe}: no new messages":
            return said
    raise AssertionError(f"pipe {pipe} still had messages after {MAX_REFRESHES} REFRESHes: {said}")


def assert_exactly_once(lake: LakeSession, sent: list[Row], table: str = "t") -> None:
    """Each message produced is in the table once, and nothing else is; the catalog agrees."""
    found = loaded(lake, table)
    twice = {row: n for row, n in found.items() if n > 1}
    assert not twice, f"loaded more than once: {twice}"
    assert sorted(found) == sorted(sent)
    by_position = Counter((partition, offset) for partition, offset, _ in found.elements())
    assert set(by_position.values()) == {1}
    assert lake.catalog.get(TableEntry, table).row_count == len(sent)


def assert_contiguous(
    lake: LakeSession, bootstrap: str, topic: str, pipe: str = "p"
) -> list[KafkaBatch]:
    """The pipe's batches, oldest first: all COMMITTED, batch 1 from offset 0, each next one
    from where the one before ended, the last one at the topic's latest offsets."""
    batches = sorted(ledger.batches(lake.catalog, pipe), key=lambda b: b.number)
    assert [b.number for b in batches] == list(range(1, len(batches) + 1))
    assert [(b.number, b.state) for b in batches] == [
        (b.number, BatchState.COMMITTED) for b in batches
    ]
    assert all(b.commit_version is not None for b in batches)
    assert len({b.commit_version for b in batches}) == len(batches)
    admin = KafkaAdmin(bootstrap, {})
    assert batches[0].start == dict.fromkeys(admin.topic(topic).partitions, 0)
    for before, after in pairwise(batches):
        assert after.start == before.end, (before, after)
    assert batches[-1].end == admin.offsets(admin.topic(topic), "latest")
    return batches


# What the REFRESH after the kill reports for batch 1.
RECOVERED = {
    KAFKA_PLANNED: "batch 1 committed",
    KAFKA_BEFORE_COMMIT: "batch 1 committed",
    KAFKA_AFTER_COMMIT: "batch 1 found committed by an earlier run",
}


@pytest.mark.parametrize("failpoint", list(RECOVERED))
def test_a_refresh_killed_at_a_failpoint_loads_every_offset_exactly_once(
    lake: LakeSession, kafka_broker: Broker, failpoint: str
) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = new_topic(bootstrap)
    create_pipe(lake, bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap})
    sent = produce(producer, topic, messages("first", 10))

    killed_at(lake.settings.lake_home, failpoint, REFRESH)
    # Batch 1 was planned over the first 10 messages and stays planned: its commit, if any,
    # is not settled in the catalog yet.
    (batch,) = ledger.batches(lake.catalog, "p")
    assert (batch.number, batch.state) == (1, BatchState.PLANNED)
    assert (batch.start, batch.end) == ({0: 0, 1: 0}, {0: 5, 1: 5})
    committed = sent if failpoint == KAFKA_AFTER_COMMIT else []
    assert loaded(lake) == Counter(committed)

    sent += produce(producer, topic, messages("second", 7))
    said = drain(lake)
    # Batch 1 keeps its planned range: the messages produced after it go to batch 2.
    assert RECOVERED[failpoint] in said[0]
    assert "offsets {0: 0, 1: 0} to {0: 5, 1: 5}" in said[0]
    assert "batch 2 committed" in said[1]
    assert_exactly_once(lake, sent)
    batches = assert_contiguous(lake, bootstrap, topic)
    assert [b.rows for b in batches] == [10, 7]


def test_kills_during_recovery_still_load_every_offset_exactly_once(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = new_topic(bootstrap)
    create_pipe(lake, bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap})
    sent = produce(producer, topic, messages("first", 6))
    home = lake.settings.lake_home

    killed_at(home, KAFKA_BEFORE_COMMIT, REFRESH)
    assert loaded(lake) == Counter()
    sent += produce(producer, topic, messages("second", 5))
    # The recovering REFRESH writes batch 1 and dies before the catalog hears of it.
    killed_at(home, KAFKA_AFTER_COMMIT, REFRESH)
    assert loaded(lake) == Counter(sent[:6])
    sent += produce(producer, topic, messages("third", 4))
    # The next one dies having only found batch 1 planned, before settling it.
    killed_at(home, KAFKA_PLANNED, REFRESH)
    (batch,) = ledger.batches(lake.catalog, "p")
    assert (batch.number, batch.state, batch.end) == (1, BatchState.PLANNED, {0: 3, 1: 3})
    assert loaded(lake) == Counter(sent[:6])

    said = drain(lake)
    assert "batch 1 found committed by an earlier run" in said[0]
    assert "batch 2 committed" in said[1]
    assert_exactly_once(lake, sent)
    batches = assert_contiguous(lake, bootstrap, topic)
    assert [b.rows for b in batches] == [6, 9]


def test_a_pipe_dropped_and_created_again_after_a_kill_loads_nothing_twice(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    """DROP PIPE and CREATE it again is the advice of a stopped pipe: it must go on, not rewind."""
    bootstrap = kafka_broker.bootstrap
    topic = new_topic(bootstrap)
    create_pipe(lake, bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap})
    sent = produce(producer, topic, messages("first", 6))
    killed_at(lake.settings.lake_home, KAFKA_AFTER_COMMIT, REFRESH)
    assert loaded(lake) == Counter(sent)

    lake.sql("DROP PIPE p")
    lake.sql(PIPE.format(pipe="p", table="t", bootstrap=bootstrap, topic=topic, group="p_group"))
    sent += produce(producer, topic, messages("second", 4))
    drain(lake)
    assert_exactly_once(lake, sent)
