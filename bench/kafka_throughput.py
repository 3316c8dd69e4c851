"""Throughput of a Kafka pipe's batch vs plain Spark reading the same offsets to Delta, in one
process.

    .venv/bin/python bench/kafka_throughput.py [--messages 5000000] [--rounds 3]

Starts a Kafka broker in a temporary folder, creates a topic of --partitions partitions and
produces --messages messages of about --size bytes (JSON text) with confluent-kafka as fast as it
can (the produce rate is printed, but it is not the figure). Then, on one local Spark session
(local[*]), warmed up first by both ways on 500,000 messages of another topic (not counted:
with 20,000, the first large batch still ran at half speed while the JVM compiled the Kafka
source's loops), each round times: the pipe's way, a new table and a Kafka pipe with
BATCH_SIZE_PER_KAFKA_PARTITION unset (one batch takes the whole topic) loaded by
`ALTER PIPE p REFRESH` through our SQL session; and plain Spark, `spark.read.format("kafka")` over
the same offsets (the batch's, from the catalog), the same projection, appended to a fresh Delta
path. Rounds alternate which goes first (round 1: the pipe, as the plain read takes its offsets).
Prints messages/s for both (best of the rounds), the ratio pipe/plain (goal >= 0.85), whether the
pipe loads >= 100,000 messages/s (goal), the load average, and each table's row count: one that
is not the number of messages produced is a FAILED run (exit status 1)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.kafka import ledger
from lake_assets.session import LakeSession
from resources.kafka_broker import Broker, spawn_broker
from resources.spark import DeltaSparkResource

GOAL_RATIO, GOAL_RATE = 0.85, 100_000
TOPIC, WARM_UP, WARM_UP_MESSAGES = "bench_events", "bench_warm_up", 500_000
COLUMNS = "partition INT, offset BIGINT, timestamp TIMESTAMP, v STRING"
PIPE = """CREATE PIPE {pipe} AS COPY INTO {table} FROM (
    SELECT partition, offset, timestamp, CAST(value AS STRING) AS v
    FROM TABLE(READ_KAFKA('{bootstrap}', '{topic}', '', '{pipe}_group', '', '', '', '',
        'raw', 'raw', 0, map()))
)"""


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})  # no info lines
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)], request_timeout=30)
    futures[topic].result(timeout=30)


def template(size: int) -> str:
    """A JSON-ish event of about `size` bytes, `{n}` standing for its number."""
    head = '{{"id": {n}, "user": "u{u:05d}", "event": "page_view", "page": "/products/{p}", '
    head += '"ts": "2026-06-01T12:00:00.000Z", "pad": "'
    tail = '"}}'
    filler = max(0, size - len(head.format(n=10**6, u=0, p=0)) - len(tail) + 2)
    return head + "x" * filler + tail


def produce(
    bootstrap: str, topic: str, messages: int, partitions: int, size: int
) -> tuple[int, int]:
    """Produce `messages` messages round-robin over the partitions; returns the messages not
    delivered and the bytes of all values."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failures.append(error)

    text, total = template(size), 0
    for number in range(messages):
        value = text.format(n=number, u=number % 50_000, p=number % 997).encode()
        total += len(value)
        while True:
            try:
                producer.produce(
                    topic, value=value, partition=number % partitions, on_delivery=delivered
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        if number % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    return len(failures) + left, total


def plain_load(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    start: dict[int, int],
    end: dict[int, int],
    path: Path,
) -> None:
    """Plain Spark: the same offsets, the same projection, appended to a Delta path."""
    (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("assign", json.dumps({topic: sorted(start)}))
        .option("startingOffsets", json.dumps({topic: {str(p): o for p, o in start.items()}}))
        .option("endingOffsets", json.dumps({topic: {str(p): o for p, o in end.items()}}))
        .load()
        .select("partition", "offset", "timestamp", F.col("value").cast("string").alias("v"))
        .write.format("delta")
        .mode("append")
        .save(str(path))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--size", type=int, default=200, help="bytes per message, about")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-kafka-throughput-"))
    print(f"working in {root}")
    broker: Broker | None = None
    spark: SparkSession | None = None
    try:
        settings = LakeSettings(
            lake_home=root / "lake",
            jars_dir=LakeSettings.from_env().jars_dir,
            spark_master="local[*]",
        )
        started = time.perf_counter()
        broker = spawn_broker(settings.jars_dir, root / "kafka", root / "broker.log")
        print(f"Kafka broker up on {broker.bootstrap} in {time.perf_counter() - started:.1f} s")
        for topic in (WARM_UP, TOPIC):
            create_topic(broker.bootstrap, topic, args.partitions)
        warm_up = min(WARM_UP_MESSAGES, args.messages)
        produce(broker.bootstrap, WARM_UP, warm_up, args.partitions, args.size)
        started = time.perf_counter()
        failures, size = produce(broker.bootstrap, TOPIC, args.messages, args.partitions, args.size)
        took = time.perf_counter() - started
        print(
            f"produced {args.messages} messages of {size / args.messages:.0f} bytes on average "
            f"({size / 2**20:.0f} MB) to {args.partitions} partitions in {took:.1f} s "
            f"({args.messages / took:,.0f} msg/s, not the figure); {failures} not delivered"
        )
        spark = DeltaSparkResource.from_settings(
            settings, console_log=str(root / "console.log")
        ).spark_session
        print(f"Spark {spark.version}, master {spark.sparkContext.master}")
        lake = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
        pipe, plain, _ = load_both(lake, spark, broker.bootstrap, WARM_UP, "w", root)
        print(
            f"warm-up on {warm_up} other messages (JVM, Kafka source, Delta; not counted): "
            f"pipe {pipe:.1f} s, plain {plain:.1f} s\n"
        )
        return measure(lake, spark, broker.bootstrap, root, args)
    except KeyboardInterrupt:
        return 130
    finally:
        if spark is not None:
            spark.stop()
        if broker is not None:
            broker.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def load_both(
    lake: LakeSession,
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    name: str,
    root: Path,
    plain_first: bool = False,
    offsets: tuple[dict[int, int], dict[int, int]] | None = None,
) -> tuple[float, float, str]:
    """The seconds of the pipe's batch (a new table and pipe `name`) and of plain Spark over the
    same offsets (into a new path), and the pipe's message. Plain Spark goes first only when
    given the offsets (a round before's batch: the topic does not change)."""
    table, pipe, path = f"t_{name}", f"p_{name}", root / f"plain_{name}"
    lake.sql(f"CREATE TABLE {table} ({COLUMNS})")
    lake.sql(PIPE.format(pipe=pipe, table=table, bootstrap=bootstrap, topic=topic))
    plain = None
    if plain_first and offsets is not None:
        plain = _timed(plain_load, spark, bootstrap, topic, *offsets, path)
    started = time.perf_counter()
    (result,) = lake.sql(f"ALTER PIPE {pipe} REFRESH")
    ours = time.perf_counter() - started
    (batch,) = ledger.batches(lake.catalog, pipe)
    if offsets is not None and (batch.start, batch.end) != offsets:
        print(f"*** batch offsets {batch.start}..{batch.end} differ from {offsets} ***")
    if plain is None:
        plain = _timed(plain_load, spark, bootstrap, topic, batch.start, batch.end, path)
    return ours, plain, result.message


def measure(
    lake: LakeSession, spark: SparkSession, bootstrap: str, root: Path, args: argparse.Namespace
) -> int:
    pipe_times, plain_times, counts = [], [], []
    offsets: tuple[dict[int, int], dict[int, int]] | None = None
    for number in range(1, args.rounds + 1):
        plain_first = number % 2 == 0
        ours, plain, message = load_both(
            lake, spark, bootstrap, TOPIC, str(number), root, plain_first, offsets
        )
        pipe_times.append(ours)
        plain_times.append(plain)
        (batch,) = ledger.batches(lake.catalog, f"p_{number}")
        offsets = (batch.start, batch.end)
        (loaded,) = lake.sql(f"SELECT COUNT(*) FROM t_{number}")
        counts.append((f"t_{number}", loaded.rows[0][0]))
        path = str(root / f"plain_{number}")
        counts.append((f"plain_{number}", spark.read.format("delta").load(path).count()))
        print(
            f"round {number} ({'plain' if plain_first else 'pipe'} first): pipe "
            f"{ours:.1f} s, plain {plain:.1f} s  ({message})"
        )

    assert offsets is not None
    messages = sum(offsets[1][p] - offsets[0][p] for p in offsets[0])
    ours, plain = min(pipe_times), min(plain_times)
    print(f"\n{messages} messages in the batch ({args.messages} produced), best of {args.rounds}:")
    print(f"plain Spark Kafka -> Delta:    {plain:7.1f} s  {messages / plain:10,.0f} msg/s")
    print(f"Kafka pipe (ALTER PIPE REFRESH): {ours:5.1f} s  {messages / ours:10,.0f} msg/s")
    ratio = plain / ours
    print(
        f"ratio pipe/plain throughput: {ratio:.2f}  (goal >= {GOAL_RATIO}: "
        f"{'met' if ratio >= GOAL_RATIO else 'NOT met'})"
    )
    rate = messages / ours
    print(
        f"pipe throughput {rate:,.0f} msg/s (goal >= {GOAL_RATE:,}: "
        f"{'met' if rate >= GOAL_RATE else 'NOT met'})"
    )
    print(f"load average (1/5/15 min) at the end: {os.getloadavg()}, {os.cpu_count()} CPUs")
    wrong = [(name, rows) for name, rows in counts if rows != args.messages]
    for name, rows in counts:
        print(f"  rows in {name}: {rows}{'' if rows == args.messages else '  <-- MISMATCH'}")
    if wrong:
        print(
            f"\n*** FAILED RUN: {len(wrong)} table(s) do not hold the {args.messages} messages "
            f"produced: {wrong} ***"
        )
        return 1
    return 0


def _timed(action: Callable[..., None], *args: object) -> float:
    started = time.perf_counter()
    action(*args)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
