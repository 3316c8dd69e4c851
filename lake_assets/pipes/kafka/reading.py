"""READ_KAFKA read with Spark's Kafka source over explicit offsets: a query outside a pipe reads
from its start (the earliest by default) to the latest offsets at statement start, fixed then,
so that every use of the relation in one statement sees the same messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core.errors import LakeError
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.grammar import KafkaErrorsSource, KafkaFormat, KafkaSource
from resources.kafka import KafkaAdmin, Topic, isolation, resolved

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# READ_KAFKA's columns, in order: Spark's Kafka source names timestampType in camel case.
COLUMNS = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "headers",
)


@dataclass(frozen=True)
class Ranges:
    """Offsets [start, end) per partition of one topic: what one read returns."""

    topic: str
    start: dict[int, int]
    end: dict[int, int]

    def messages(self) -> int:
        """An upper bound: transaction markers and compaction leave gaps between offsets."""
        return sum(self.end[p] - self.start[p] for p in self.start)


def _partition_offsets(text: str, topic: Topic, what: str) -> dict[int, int]:
    """`'{"0": 5, "1": 7}'`: an offset per partition; partitions not named keep `default`."""
    try:
        named = {int(p): int(o) for p, o in json.loads(text).items()}
    except (ValueError, AttributeError, TypeError):
        raise LakeError(
            f"READ_KAFKA: {what} '{text}' is not an offset per partition",
            "write it as '{\"0\": 5, \"1\": 7}' (partition: offset), or '' for the default",
        ) from None
    unknown = sorted(set(named) - set(topic.partitions))
    if unknown:
        raise LakeError(
            f"READ_KAFKA: topic {topic.name} has no partition {unknown[0]}",
            f"name partitions among {list(topic.partitions)}",
        )
    return named


def _epoch_millis(text: str, what: str) -> int:
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise LakeError(
            f"READ_KAFKA: {what} '{text}' is not a time",
            "write epoch milliseconds or a timestamp such as '2026-06-01 12:00:00'",
        ) from None


def _position(
    admin: KafkaAdmin, topic: Topic, source: KafkaSource, edge: str, fallback: dict[int, int]
) -> dict[int, int]:
    """Where the read starts or ends (`edge`): the offsets given, else the first offsets at the
    time given (a partition with none yet: `fallback`), else `fallback`."""
    offsets, timestamp = getattr(source, f"{edge}_offsets"), getattr(source, f"{edge}_timestamp")
    if offsets:
        return {**fallback, **_partition_offsets(offsets, topic, f"{edge} offsets")}
    if timestamp:
        millis = _epoch_millis(timestamp, f"{edge} timestamp")
        found = admin.offsets(topic, millis, isolation(dict(source.options)))
        return {p: o if o >= 0 else fallback[p] for p, o in found.items()}
    return fallback


def bounded_ranges(admin: KafkaAdmin, source: KafkaSource) -> Ranges:
    """The offsets a query outside a pipe reads; an offset already removed is an error."""
    topic = admin.topic(source.topic)
    level = isolation(dict(source.options))
    earliest = admin.offsets(topic, "earliest", level)
    latest = admin.offsets(topic, "latest", level)
    start = _position(admin, topic, source, "start", earliest)
    end = _position(admin, topic, source, "end", latest)
    for partition in topic.partitions:
        if start[partition] < earliest[partition]:
            raise LakeError(
                f"READ_KAFKA: offset {start[partition]} of {topic.name} partition {partition} "
                f"is gone (retention); the earliest kept is {earliest[partition]}",
                "start at or after the earliest offset, or leave the start offsets ''",
            )
        end[partition] = max(start[partition], min(end[partition], latest[partition]))
    return Ranges(topic.name, start, end)


def _as(column: str, wanted: KafkaFormat) -> F.Column:
    return F.col(column).cast("string" if wanted is KafkaFormat.STRING else "binary").alias(column)


def read_ranges(
    spark: SparkSession, source: KafkaSource, ranges: Ranges, options: dict[str, str]
) -> DataFrame:
    """Exactly the messages in `ranges`, with READ_KAFKA's columns; `options` resolved."""
    positions = {ranges.topic: {str(p): o for p, o in ranges.start.items()}}
    ends = {ranges.topic: {str(p): o for p, o in ranges.end.items()}}
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", source.bootstrap)
        .option("assign", json.dumps({ranges.topic: sorted(ranges.start)}))
        .option("startingOffsets", json.dumps(positions))
        .option("endingOffsets", json.dumps(ends))
        .option("includeHeaders", "true")
        .option("failOnDataLoss", "true")
        .option("kafka.isolation.level", isolation(options).value)
    )
    for key, value in options.items():
        if key != "isolation.level":
            reader = reader.option(f"kafka.{key}", value)
    return reader.load().select(
        "topic",
        F.col("partition").cast("int").alias("partition"),
        "offset",
        "timestamp",
        F.col("timestampType").alias("timestamp_type"),
        _as("key", source.key_format),
        _as("value", source.value_format),
        "headers",
    )


def read_kafka(session: Context, source: KafkaSource) -> DataFrame:
    """READ_KAFKA in a query: a bounded read, its end fixed when the statement starts."""
    options = resolved(dict(source.options), session.settings.lake_home)
    ranges = bounded_ranges(KafkaAdmin(source.bootstrap, options), source)
    return read_ranges(session.spark, source, ranges, options)


ERRORS_SCHEMA = (
    "partition INT, offset BIGINT, timestamp TIMESTAMP, key BINARY, value BINARY, error STRING, "
    "batch BIGINT"
)


def read_kafka_errors(session: Context, source: KafkaErrorsSource) -> DataFrame:
    """kafka_errors('p'): the pipe's bad messages, from the catalog's index of its commits."""
    session.catalog.get(PipeEntry, source.pipe)
    return session.spark.createDataFrame(
        [
            (
                m.partition,
                m.offset,
                None if m.timestamp is None else datetime.fromisoformat(m.timestamp),
                m.key,
                m.value,
                m.error,
                batch,
            )
            for batch, m in ledger.bad_messages(session.catalog, source.pipe)
        ],
        ERRORS_SCHEMA,
    )
