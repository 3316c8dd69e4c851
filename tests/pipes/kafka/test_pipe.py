"""Kafka pipes on a real broker, real Spark and Delta: READ_KAFKA as a bounded read, a pipe
loading batch after batch exactly once, a batch recovered from the table's log, and the pipe
stopped (not rewound) when its topic is recreated."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lake_assets.core.errors import LakeError
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.batches import plan
from lake_assets.pipes.kafka.ledger import BatchState
from lake_assets.session import LakeSession
from resources.kafka_broker import Broker
from tests.ingest_helpers import rows
from tests.kafka_server import new_topic, produce

# A Kafka pipe with a comment after each READ_KAFKA argument; the broker and topic vary.
ORDERS_PIPE = """CREATE PIPE kafka_orders_pipe VIRTUAL_CLUSTER = 'default' BATCH_INTERVAL_IN_SECONDS = '60' AS COPY INTO orders_raw FROM ( SELECT CAST(value AS STRING) AS raw_msg FROM TABLE(READ_KAFKA( '{bootstrap}', -- bootstrap.servers
'{topic}', -- topic
'', -- topic pattern (not supported yet, leave empty)
'pipe_orders_group', -- group_id (must be unique per Pipe for the same Topic)
'', '', '', '', -- start/end offsets and timestamps, managed by Pipe automatically
'raw', 'raw', -- key/value format
0, map() -- max error count, additional Kafka config
)) );"""  # noqa: E501


def read_kafka(bootstrap: str, topic: str, start: str = "", group: str = "") -> str:
    return (
        f"TABLE(READ_KAFKA('{bootstrap}', '{topic}', '', '{group}', '{start}', '', '', '', "
        "'string', 'string', 0, map()))"
    )


@pytest.fixture
def producer(kafka_broker: Broker) -> Producer:
    return Producer({"bootstrap.servers": kafka_broker.bootstrap})


def send(producer: Producer, topic: str, values: list[str]) -> None:
    produce(producer, topic, [(i % 2, value) for i, value in enumerate(values)])


def test_read_kafka_is_a_bounded_read_of_the_topic(
    lake: LakeSession, kafka_broker: Broker, producer: Producer
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    send(producer, topic, ["a", "b", "c", "d", "e"])
    relation = read_kafka(kafka_broker.bootstrap, topic)
    found = rows(lake, f"SELECT partition, offset, value FROM {relation} ORDER BY value")
    assert found == [(0, 0, "a"), (1, 0, "b"), (0, 1, "c"), (1, 1, "d"), (0, 2, "e")]
    (result,) = lake.sql(f"SELECT * FROM {relation} LIMIT 1")
    assert result.columns == [
        "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers"
    ]  # fmt: skip
    later = read_kafka(kafka_broker.bootstrap, topic, start='{"0": 2}')
    assert rows(lake, f"SELECT value FROM {later} ORDER BY value") == [("b",), ("d",), ("e",)]


def test_the_orders_pipe_loads_each_message_once_batch_after_batch(
    lake: LakeSession, kafka_broker: Broker, producer: Producer
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    lake.sql("CREATE TABLE orders_raw (raw_msg STRING)")
    lake.sql(ORDERS_PIPE.format(bootstrap=kafka_broker.bootstrap, topic=topic))
    send(producer, topic, ["o1", "o2", "o3"])
    (first,) = lake.sql("ALTER PIPE kafka_orders_pipe REFRESH")
    assert "batch 1 committed" in first.message
    send(producer, topic, ["o4", "o5"])
    lake.sql("ALTER PIPE kafka_orders_pipe REFRESH")
    (idle,) = lake.sql("ALTER PIPE kafka_orders_pipe REFRESH")
    assert idle.message == "pipe kafka_orders_pipe: no new messages"
    loaded = rows(lake, "SELECT raw_msg FROM orders_raw ORDER BY raw_msg")
    assert loaded == [("o1",), ("o2",), ("o3",), ("o4",), ("o5",)]
    (described,) = lake.sql("DESC PIPE kafka_orders_pipe")
    properties = dict(described.rows)
    assert properties["pipe_kind"] == "KAFKA"
    assert properties["input_name"] == topic
    assert properties["committed_offsets"] == "0:3, 1:2"
    assert properties["lag"] == "0:0, 1:0"
    assert properties["invalid_reason"] is None
    (shown,) = lake.sql("SHOW PIPES")
    assert [row[:5] for row in shown.rows] == [
        ("kafka_orders_pipe", "RUNNING", "KAFKA", topic, "orders_raw")
    ]


def test_a_batch_committed_before_a_crash_is_settled_not_written_again(
    lake: LakeSession, kafka_broker: Broker, producer: Producer
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    lake.sql("CREATE TABLE orders_raw (raw_msg STRING)")
    lake.sql(ORDERS_PIPE.format(bootstrap=kafka_broker.bootstrap, topic=topic))
    send(producer, topic, ["o1", "o2"])
    lake.sql("ALTER PIPE kafka_orders_pipe REFRESH")
    # The run died after its commit and before the catalog heard of it: batch 1 is PLANNED.
    catalog = lake.catalog
    (batch,) = ledger.batches(catalog, "kafka_orders_pipe")
    ledger.forget_batches(catalog, "kafka_orders_pipe")
    ledger.plan_batch(
        catalog, replace(batch, state=BatchState.PLANNED, commit_version=None, rows=None)
    )
    assert ledger.batches(catalog, "kafka_orders_pipe")[0].state == BatchState.PLANNED
    (result,) = lake.sql("ALTER PIPE kafka_orders_pipe REFRESH")
    assert "batch 1 found committed by an earlier run" in result.message
    assert rows(lake, "SELECT COUNT(*) FROM orders_raw") == [(2,)]


def test_a_second_pipe_with_the_same_group_is_refused(
    lake: LakeSession, kafka_broker: Broker
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    lake.sql("CREATE TABLE orders_raw (raw_msg STRING)")
    lake.sql(ORDERS_PIPE.format(bootstrap=kafka_broker.bootstrap, topic=topic))
    second = ORDERS_PIPE.format(bootstrap=kafka_broker.bootstrap, topic=topic).replace(
        "kafka_orders_pipe", "second_pipe"
    )
    with pytest.raises(LakeError, match=r"already reads topic .* with group pipe_orders_group"):
        lake.sql(second)


def test_a_recreated_topic_stops_the_pipe_instead_of_rereading(
    lake: LakeSession, kafka_broker: Broker, producer: Producer
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    lake.sql("CREATE TABLE orders_raw (raw_msg STRING)")
    lake.sql(ORDERS_PIPE.format(bootstrap=kafka_broker.bootstrap, topic=topic))
    send(producer, topic, ["o1"])
    lake.sql("ALTER PIPE kafka_orders_pipe REFRESH")
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=30)
    recreated = _recreate(kafka_broker.bootstrap, topic)
    send(producer, recreated, ["n1", "n2"])
    pipe = lake.catalog.get(PipeEntry, "kafka_orders_pipe")
    with pytest.raises(LakeError, match="was deleted and created again"):
        plan(lake.catalog, lake.settings, pipe)
    reason = lake.catalog.get(PipeEntry, "kafka_orders_pipe").invalid_reason
    assert reason is not None
    assert "was deleted and created again" in reason
    (described,) = lake.sql("DESC PIPE kafka_orders_pipe")
    assert "was deleted and created again" in dict(described.rows)["invalid_reason"]
    assert rows(lake, "SELECT raw_msg FROM orders_raw") == [("o1",)]


def _recreate(bootstrap: str, topic: str) -> str:
    """The same name again, once the broker has finished deleting it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for _ in range(60):
        futures = admin.create_topics([NewTopic(topic, num_partitions=2)], request_timeout=30)
        try:
            futures[topic].result(timeout=30)
            return topic
        except KafkaException:  # still being deleted
            time.sleep(0.5)
    raise AssertionError(f"topic {topic} could not be created again")


def counting_pipe(bootstrap: str, topic: str, max_errors: int) -> str:
    """A pipe whose SELECT casts each message's text to INT: 'x' is a bad message."""
    return (
        "CREATE PIPE counts AS COPY INTO numbers FROM (SELECT partition, offset, "
        "CAST(CAST(value AS STRING) AS INT) AS n FROM TABLE(READ_KAFKA("
        f"'{bootstrap}', '{topic}', '', 'counts_group', '', '', '', '', 'raw', 'raw', "
        f"{max_errors}, map())))"
    )


def test_bad_messages_up_to_max_errors_are_set_aside_and_the_rest_loads_once(
    lake: LakeSession, kafka_broker: Broker, producer: Producer
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    lake.sql("CREATE TABLE numbers (partition INT, offset BIGINT, n INT)")
    lake.sql(counting_pipe(kafka_broker.bootstrap, topic, 2))
    send(producer, topic, ["1", "2", "x", "4", "y", "6"])
    (result,) = lake.sql("ALTER PIPE counts REFRESH")
    assert "batch 1 committed" in result.message
    assert rows(lake, "SELECT n FROM numbers ORDER BY n") == [(1,), (2,), (4,), (6,)]
    errors = rows(
        lake,
        "SELECT partition, offset, CAST(value AS STRING), batch FROM kafka_errors('counts') "
        "ORDER BY partition, offset",
    )
    assert errors == [(0, 1, "x", 1), (0, 2, "y", 1)]
    (message,) = rows(lake, "SELECT error FROM kafka_errors('counts') LIMIT 1")
    assert "CAST_INVALID_INPUT" in message[0]
    assert ledger.batches(lake.catalog, "counts")[0].bad == 2


def test_more_bad_messages_than_max_errors_fail_the_batch_and_stop_the_pipe(
    lake: LakeSession, kafka_broker: Broker, producer: Producer
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    lake.sql("CREATE TABLE numbers (partition INT, offset BIGINT, n INT)")
    lake.sql(counting_pipe(kafka_broker.bootstrap, topic, 1))
    send(producer, topic, ["1", "x", "3", "y"])
    with pytest.raises(LakeError, match="more than 1 bad messages in the batch") as raised:
        lake.sql("ALTER PIPE counts REFRESH")
    assert "DROP PIPE counts" in raised.value.fix
    assert rows(lake, "SELECT COUNT(*) FROM numbers") == [(0,)]
    (batch,) = ledger.batches(lake.catalog, "counts")
    assert batch.state == BatchState.PLANNED
    reason = lake.catalog.get(PipeEntry, "counts").invalid_reason
    assert reason is not None
    assert "partition 1 offset 0" in reason
    # Created again with a larger allowance, it goes on from the group: here, from the start.
    lake.sql("DROP PIPE counts")
    lake.sql(counting_pipe(kafka_broker.bootstrap, topic, 2))
    lake.sql("ALTER PIPE counts REFRESH")
    assert rows(lake, "SELECT n FROM numbers ORDER BY n") == [(1,), (3,)]
