"""Kafka pipe latency: message produced → queryable, through what `make dev` runs.

    .venv/bin/python bench/kafka_latency.py [--messages 200] [--seconds 60] [--interval 5]

Starts a Spark Connect server (unless --no-connect: then every run starts its own JVM),
`lake code-server` and `dagster-daemon run` in a temporary DAGSTER_HOME and LAKE_HOME, and a Kafka
broker in the same temporary folder (stopped at the end). Creates a topic, a table and a Kafka pipe
with BATCH_INTERVAL_IN_SECONDS = --interval first (the code location reads them when the daemon
loads it), has one warm-up message loaded, then sends --messages messages spread over --seconds
(±20 % between two), round-robin over the partitions, each sent at once (linger.ms 0). A
message's latency runs from its SEND time (before `produce()`; the broker's acknowledgement, the
delivery callback, comes later by the printed delay) to the mtime of the Delta commit file of the
batch that carries it: the catalog's committed batches give each batch's offsets and
commit_version, so no Spark is needed to watch. Prints each batch's figures, p50, p95 and max
against the goal (p50 ≤ 15 s, p95 ≤ 25 s) and a breakdown from the catalog's batches (planned_at)
and the Dagster instance's run records (the run of batch N carries its batch tag)."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from dagster import DagsterInstance, RunsFilter
from harness import Bench, RunTimes, bench_home, percentile, print_parts, run_times

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.ledger import BatchState, KafkaBatch
from lake_assets.pipes.kafka.sensor import batch_key
from lake_assets.pipes.sensors import BATCH_TAG
from lake_assets.tables.entry import TableEntry
from resources.kafka_broker import spawn_broker

GOAL_P50, GOAL_P95 = 15.0, 25.0
TOPIC, PIPE, TABLE = "bench_events", "bench_pipe", "bench_t"
SETUP = """
CREATE TABLE {table} (partition INT, offset BIGINT, v STRING);
CREATE PIPE {pipe} BATCH_INTERVAL_IN_SECONDS = '{interval}' AS COPY INTO {table} FROM (
    SELECT partition, offset, CAST(value AS STRING) AS v
    FROM TABLE(READ_KAFKA('{bootstrap}', '{topic}', '', 'bench_group', '', '', '', '',
        'raw', 'raw', 0, map()))
);
"""


@dataclass
class Sample:
    """One message: when it was sent and acknowledged, where it landed, when it was committed."""

    number: int
    sent: float
    acked: float | None = None
    partition: int | None = None
    offset: int | None = None
    batch: KafkaBatch | None = None
    committed: float | None = None

    @property
    def latency(self) -> float:
        assert self.committed is not None
        return self.committed - self.sent


class Sender:
    """A producer that sends each message at once and notes its acknowledgement."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.partitions = partitions
        self.failures: list[KafkaError] = []

    def send(self, number: int) -> Sample:
        sample = Sample(number, time.time())

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self.failures.append(error)
                return
            sample.acked = time.time()
            sample.partition, sample.offset = message.partition(), message.offset()

        value = f'{{"n": {number}, "sent": {sample.sent:.3f}}}'.encode()
        self.producer.produce(
            TOPIC, value=value, partition=number % self.partitions, on_delivery=delivered
        )
        self.producer.poll(0)
        return sample

    def wait(self, seconds: float) -> None:
        """Serve acknowledgements while waiting."""
        deadline = time.time() + seconds
        while (left := deadline - time.time()) > 0:
            self.producer.poll(min(left, 0.1))

    def flush(self) -> int:
        return self.producer.flush(30)


def epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


def commit_time(location: str, version: int) -> float:
    log = Path(location.removeprefix("file:")) / "_delta_log"
    return (log / f"{version:020d}.json").stat().st_mtime


def settle(catalog: Catalog, location: str, samples: list[Sample]) -> None:
    """Each acknowledged sample's committed batch and its commit's time, where there is one."""
    committed = [
        b
        for b in ledger.batches(catalog, PIPE)
        if b.state == BatchState.COMMITTED and b.commit_version is not None
    ]
    for sample in samples:
        if sample.committed is not None or sample.offset is None or sample.partition is None:
            continue
        for batch in committed:
            p = sample.partition
            if batch.start.get(p, 0) <= sample.offset < batch.end.get(p, 0):
                assert batch.commit_version is not None
                sample.batch = batch
                sample.committed = commit_time(location, batch.commit_version)
                break


def wait_committed(
    catalog: Catalog, location: str, samples: list[Sample], sender: Sender, timeout: float
) -> None:
    deadline = time.time() + timeout
    while True:
        settle(catalog, location, samples)
        if all(s.committed is not None for s in samples) or time.time() > deadline:
            return
        sender.wait(0.5)


def run_of(instance: DagsterInstance, pipe: PipeEntry, sample: Sample) -> RunTimes | None:
    """The run that committed the sample's batch (its batch tag; a retry's too)."""
    assert sample.batch is not None
    assert sample.committed is not None
    tag = batch_key(pipe, sample.batch.number)
    runs = run_times(instance, RunsFilter(tags={BATCH_TAG: tag}))
    for run in runs:
        if run.started and run.ended and run.started <= sample.committed <= run.ended + 1:
            return run
    return runs[-1] if runs else None


def breakdown(
    instance: DagsterInstance, pipe: PipeEntry, batches: list[KafkaBatch], done: list[Sample]
) -> None:
    """Per message: the run of the batch before still under way (a batch is planned only once
    the one before is settled), the sensor's next tick that plans its batch, the run's request,
    its start, its set-up, and the statement to the commit."""
    parts: dict[str, list[float]] = {
        k: [] for k in ("behind", "plan", "request", "start", "setup", "load")
    }
    settled = {b.number: epoch(b.finished_at) for b in batches if b.finished_at}
    runs: dict[int, RunTimes | None] = {}
    for sample in done:
        assert sample.batch is not None
        assert sample.committed is not None
        number = sample.batch.number
        if number not in runs:
            runs[number] = run_of(instance, pipe, sample)
        run = runs[number]
        planned = epoch(sample.batch.planned_at)
        if run is None or run.started is None or run.step is None:
            continue
        free = min(planned, max(sample.sent, settled.get(number - 1, 0.0)))
        parts["behind"].append(free - sample.sent)
        parts["plan"].append(planned - free)
        parts["request"].append(run.created - planned)
        parts["start"].append(run.started - run.created)
        parts["setup"].append(run.step - run.started)
        parts["load"].append(sample.committed - run.step)
    labels = {
        "behind": "sent → the batch before settled (its run under way)",
        "plan": "→ its batch planned (the sensor's next tick)",
        "request": "batch planned → run requested",
        "start": "run requested → RUN_START (dequeue, process start, code load)",
        "setup": "RUN_START → STEP_START (resources, step start)",
        "load": "STEP_START → commit (Spark session, plan, read, write, commit)",
    }
    print_parts(f"breakdown over {len(parts['plan'])} messages", labels, parts)
    print(f"  runs: {sum(1 for r in runs.values() if r)} for {len(runs)} batches")


def print_batches(done: list[Sample]) -> None:
    by_batch: dict[int, list[Sample]] = {}
    for sample in done:
        assert sample.batch is not None
        by_batch.setdefault(sample.batch.number, []).append(sample)
    print("batch  version  messages  planned after its first send  latency min / max")
    for number, samples in sorted(by_batch.items()):
        batch = samples[0].batch
        assert batch is not None
        planned = epoch(batch.planned_at) - min(s.sent for s in samples)
        latencies = [s.latency for s in samples]
        print(
            f"{number:5d}  {batch.commit_version:7d}  {len(samples):8d}  {planned:26.1f} s  "
            f"{min(latencies):6.1f} / {max(latencies):6.1f} s"
        )


def measure(bench: Bench, args: argparse.Namespace) -> int:
    settings = LakeSettings.from_env()
    started = time.monotonic()
    broker = spawn_broker(settings.jars_dir, bench.root / "kafka", bench.root / "kafka-broker.log")
    print(f"Kafka broker up on {broker.bootstrap} in {time.monotonic() - started:.1f} s")
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 4})
        topic = NewTopic(TOPIC, num_partitions=args.partitions)
        admin.create_topics([topic], request_timeout=30)[TOPIC].result(timeout=30)
        lake, spark = bench.session()
        try:
            lake.sql(
                SETUP.format(
                    table=TABLE,
                    pipe=PIPE,
                    interval=args.interval,
                    bootstrap=broker.bootstrap,
                    topic=TOPIC,
                )
            )
        finally:
            spark.spark_session.stop()  # the bench's own session is done: no Spark to watch
        sender = Sender(broker.bootstrap, args.partitions)
        try:
            return _measure(bench, lake.catalog, sender, args)
        finally:
            sender.producer.close()  # before the broker stops: no failed reconnections
    finally:
        broker.stop()


def _measure(bench: Bench, catalog: Catalog, sender: Sender, args: argparse.Namespace) -> int:
    location = catalog.get(TableEntry, TABLE).location
    bench.start_daemon()
    warm = sender.send(0)
    sender.flush()
    wait_committed(catalog, location, [warm], sender, 600)
    if warm.committed is None:
        print(f"the warm-up message was not loaded within 600 s; see {bench.root}/daemon.log")
        return 1
    print(f"warm-up message (daemon start included): {warm.latency:.1f} s\n")

    rng = random.Random(3)
    gap = args.seconds / args.messages
    samples: list[Sample] = []
    first = time.time()
    for number in range(1, args.messages + 1):
        samples.append(sender.send(number))
        sender.wait(gap * rng.uniform(0.8, 1.2))
    sent_for = time.time() - first
    unsent = sender.flush()
    wait_committed(catalog, location, samples, sender, 300)
    instance = bench.quiesce()

    done = [s for s in samples if s.committed is not None]
    print(
        f"sent {len(samples)} messages in {sent_for:.1f} s; {len(sender.failures)} failed, "
        f"{unsent} not acknowledged, {len(samples) - len(done)} not loaded within 300 s\n"
    )
    if not done:
        print("no message was loaded")
        return 1
    print_batches(done)
    latencies = [s.latency for s in done]
    acks = [s.acked - s.sent for s in samples if s.acked is not None]
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    met = p50 <= GOAL_P50 and p95 <= GOAL_P95
    batches = len({s.batch.number for s in done if s.batch is not None})
    print(
        f"\n{len(done)}/{len(samples)} messages loaded in {batches} batches; latency "
        f"(send → commit) p50 {p50:.1f} s, p95 {p95:.1f} s, max "
        f"{max(latencies):.1f} s (goal: p50 ≤ {GOAL_P50:.0f} s, p95 ≤ {GOAL_P95:.0f} s: "
        f"{'met' if met else 'NOT met'})"
    )
    if acks:
        print(
            f"send → broker acknowledgement: p50 {percentile(acks, 0.5) * 1000:.1f} ms, "
            f"max {max(acks) * 1000:.1f} ms"
        )
    breakdown(instance, catalog.get(PipeEntry, PIPE), ledger.batches(catalog, PIPE), done)
    print(f"load average (1/5/15 min) at the end: {os.getloadavg()}, {os.cpu_count()} CPUs")
    return 0 if len(done) == len(samples) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0, help="over how long to send them")
    parser.add_argument("--interval", type=int, default=5, help="BATCH_INTERVAL_IN_SECONDS")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--no-connect", action="store_true", help="every run starts its own JVM")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    try:
        with bench_home("lake-kafka-latency-", not args.no_connect, args.keep) as bench:
            return measure(bench, args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
