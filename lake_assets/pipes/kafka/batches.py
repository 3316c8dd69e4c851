"""A Kafka pipe's batches, exactly once.

Batch N is planned without Spark from the topic's offsets: partition by partition, from where
batch N-1 ended (a new partition from its earliest offset) to the latest offset, capped by
BATCH_SIZE_PER_KAFKA_PARTITION. Its range is stored in the catalog before any run reads it and
never changes: a failed run retries the same range. A run appends the range's rows in ONE Delta
commit whose record carries the pipe, N and the range, fenced by Delta's idempotent writes
(app id of the pipe, version N), so a second write of N is skipped by Delta itself; the commit,
found again by its tag, settles the batch in the catalog, and a crash between the two is settled
by the next run from the table's log. The consumer group's offsets are committed afterwards for
lag tools only. Offsets are positions, not counts: transaction markers and compaction leave gaps."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import Fence, committing, decode, fence_lost, find, records
from lake_assets.core.delta import quote_name, row_changes
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.settings import LakeSettings
from lake_assets.core.writes import record_commit_state
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.grammar import KafkaCopy, kafka_copy_of, kafka_source_of
from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.bad_messages import (
    TooManyBadMessages,
    decoded,
    encoded,
    find_bad,
    good_messages,
)
from lake_assets.pipes.kafka.grammar import KafkaSource
from lake_assets.pipes.kafka.ledger import KAFKA_MARKER, BadMessage, BatchState, KafkaBatch
from lake_assets.pipes.kafka.reading import bounded_ranges, read_ranges
from lake_assets.sql.statements import Dml, Query
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.enforcing import refuse_expectations
from lake_assets.tables.entry import TableEntry
from resources.kafka import KafkaAdmin, Topic, isolation, resolved

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
KAFKA_AFTER_COMMIT = "kafka-after-commit"
KAFKA_BEFORE_COMMIT = "kafka-before-commit"
KAFKA_PLANNED = "kafka-after-plan"

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


class PipeStopped(LakeError):
    """The topic is no longer what the pipe read (recreated, or messages lost to retention):
    going on would skip or re-read messages silently, so the pipe stops with the reason."""


@dataclass(frozen=True)
class BatchOutcome:
    """What a run did with its pipe's batch: `recovered` when an earlier run had committed it."""

    pipe: str
    batch: KafkaBatch
    recovered: bool = False
    lag: dict[int, int] | None = None  # messages left in the topic after it (None: unknown)

    def summary(self) -> str:
        b = self.batch
        how = "found committed by an earlier run" if self.recovered else "committed"
        return (
            f"pipe {self.pipe}: batch {b.number} {how} at version {b.commit_version}: "
            f"{b.rows} rows from offsets {b.start} to {b.end}"
        )


def kafka_source(pipe: PipeEntry) -> KafkaSource:
    return kafka_source_of(pipe.copy_statement)


def admin_of(pipe: PipeEntry, settings: LakeSettings) -> KafkaAdmin:
    source = kafka_source(pipe)
    return KafkaAdmin(source.bootstrap, resolved(dict(source.options), settings.lake_home))


def stop(catalog: Catalog, pipe: str, reason: str) -> None:
    catalog.update(PipeEntry, pipe, lambda entry: replace(entry, invalid_reason=reason))


def _checked_topic(admin: KafkaAdmin, pipe: PipeEntry) -> Topic:
    topic = admin.topic(pipe.topic)
    if topic.id != pipe.topic_id:
        raise PipeStopped(
            f"pipe {pipe.name}: topic {pipe.topic} was deleted and created again (its id is "
            f"{topic.id}, the pipe's was {pipe.topic_id}); its offsets start over",
            f"DROP PIPE {pipe.name} and CREATE it again with a new consumer group id to read the "
            "new topic from its start (with the same group it would go on from the old offsets)",
        )
    return topic


def _start(
    pipe: PipeEntry, topic: Topic, ended: dict[int, int], earliest: dict[int, int]
) -> dict[int, int]:
    """Where batch N starts: where N-1 ended (batch 1: see _first_start); a partition new since,
    from its earliest offset."""
    start = {p: ended.get(p, earliest[p]) for p in topic.partitions}
    for partition, offset in start.items():
        if offset < earliest[partition]:
            raise PipeStopped(
                f"pipe {pipe.name}: offsets {offset} to {earliest[partition] - 1} of {topic.name} "
                f"partition {partition} were removed (retention) before the pipe loaded them",
                f"DROP PIPE {pipe.name} and CREATE it again with a new consumer group id to go on "
                "from the earliest offsets kept (the removed messages cannot be loaded), and "
                "lengthen the topic's retention",
            )
    gone = sorted(set(ended) - set(topic.partitions))
    if gone:
        raise PipeStopped(
            f"pipe {pipe.name}: topic {topic.name} lost partition {gone[0]}",
            f"DROP PIPE {pipe.name} and CREATE it again",
        )
    return start


def plan(catalog: Catalog, settings: LakeSettings, pipe: PipeEntry) -> KafkaBatch | None:
    """The batch a run should load now: the planned one not committed yet, else a new one when
    the topic has messages past the last batch, else None. No Spark. A topic that is no longer
    what the pipe read stops the pipe with the reason."""
    try:
        return _plan(catalog, settings, pipe)
    except PipeStopped as error:
        stop(catalog, pipe.name, str(error))
        raise


def _first_start(admin: KafkaAdmin, pipe: PipeEntry, topic: Topic) -> dict[int, int]:
    """Where batch 1 starts: where an earlier pipe's last commit to the table ended (the log is
    the truth), else the group's committed offsets; a partition in neither, its earliest."""
    return dict(pipe.resume_from) or admin.committed(pipe.group_id, topic)


def resume_point(
    spark: SparkSession | None, table: TableEntry, topic: str, group: str
) -> dict[int, int]:
    """The end of the newest batch of `topic` and `group` committed to the table by any pipe,
    from the table's log; {} when none has been."""
    for _, record in records(spark, table.location, KAFKA_MARKER):
        if (record.get("topic"), record.get("group")) == (topic, group):
            return {int(p): o for p, o in record["end"].items()}
    return {}


def _plan(catalog: Catalog, settings: LakeSettings, pipe: PipeEntry) -> KafkaBatch | None:
    batches = ledger.batches(catalog, pipe.name, limit=1)
    previous = batches[0] if batches else None
    if previous is not None and previous.state == BatchState.PLANNED:
        return previous
    admin = admin_of(pipe, settings)
    topic = _checked_topic(admin, pipe)
    level = isolation(dict(kafka_source(pipe).options))
    ended = previous.end if previous is not None else _first_start(admin, pipe, topic)
    start = _start(pipe, topic, ended, admin.offsets(topic, "earliest", level))
    latest = admin.offsets(topic, "latest", level)
    size = pipe.batch_size_per_partition
    end = {p: latest[p] if size is None else min(latest[p], start[p] + size) for p in start}
    if all(end[p] <= start[p] for p in start):
        return None
    return ledger.plan_batch(
        catalog,
        KafkaBatch(
            pipe=pipe.name,
            number=previous.number + 1 if previous else 1,
            start=start,
            end={p: max(end[p], start[p]) for p in start},
            table_version=_version(catalog, pipe.table),
            planned_at=now_utc(),
        ),
    )


def _version(catalog: Catalog, table: str) -> int:
    """The table's version as a batch is planned: its commit is looked for after it (from the
    start when the catalog does not know it yet)."""
    version = catalog.stored(table).version
    return -1 if version is None else version


def batch_record(pipe: PipeEntry, batch: KafkaBatch) -> dict[str, Any]:
    """The commit record: its tag names this pipe (as created) and the batch, never reused."""
    return {
        KAFKA_MARKER: 1,
        "tag": f"{pipe.name}@{pipe.created_at}#{batch.number}",
        "pipe": pipe.name,
        "topic": pipe.topic,
        "group": pipe.group_id,
        "batch": batch.number,
        "start": {str(p): o for p, o in batch.start.items()},
        "end": {str(p): o for p, o in batch.end.items()},
    }


def _fence(pipe: PipeEntry, batch: KafkaBatch) -> Fence:
    """Delta skips a write of batch N once this app id has committed number N: the batch's
    number is the pipe's own count, fixed with its range when it was planned, so no other
    commit to the table moves it."""
    app_id = f"lake_kafka:{pipe.name}@{pipe.created_at}"
    return Fence(app_id, batch.table_version, batch.number)


def _write(session: Context, pipe: PipeEntry, batch: KafkaBatch, record: dict) -> None:
    """INSERT INTO the table the pipe's SELECT over exactly the batch's offsets; when the SELECT
    fails on some messages, the others once those are set aside (see bad_messages)."""
    copy = kafka_copy_of(pipe.copy_statement, session.grammar)
    source = replace(
        copy.kafka,
        start_offsets=json.dumps(record["start"]),
        end_offsets=json.dumps(record["end"]),
    )
    insert = exp.insert(copy.query.expression, copy.table)
    bound = session.bind(Dml("INSERT", copy.table, insert, {copy.placeholder: source}))
    spark = session.spark
    failpoints.reached(KAFKA_BEFORE_COMMIT)
    try:
        with committing(spark, record, _fence(pipe, batch)):
            spark.sql(bound.sql).collect()
    except (LakeError, AnalysisException):
        raise
    except Exception as error:  # perhaps some messages: find them, or fail as it did
        if fence_lost(error):
            raise  # another run committed the batch meanwhile: not a message's failure
        raw = _raw(session, source)
        ranges = {p: (batch.start[p], batch.end[p]) for p in batch.start}
        bad = _bad_messages(session, copy, raw, ranges, source.max_errors)
        if not bad:
            raise error  # not a message's failure: the run fails as it did
        good_messages(raw, bad).createOrReplaceTempView(copy.placeholder)
        with committing(spark, {**record, "bad": encoded(bad)}, _fence(pipe, batch)):
            spark.sql(bound.sql).collect()
    failpoints.reached(KAFKA_AFTER_COMMIT)


def _raw(session: Context, source: KafkaSource) -> DataFrame:
    """The batch's messages read once into Spark's memory, for the search and the write."""
    options = resolved(dict(source.options), session.settings.lake_home)
    ranges = bounded_ranges(KafkaAdmin(source.bootstrap, options), source)
    return read_ranges(session.spark, source, ranges, options).localCheckpoint(eager=True)


def _bad_messages(
    session: Context,
    copy: KafkaCopy,
    raw: DataFrame,
    ranges: dict[int, tuple[int, int]],
    limit: int,
) -> list[BadMessage]:
    """The messages the SELECT fails on, cast to the table's columns as INSERT casts them."""
    spark = session.spark
    select = session.bind(Query(copy.query.expression)).sql
    columns = recorded_schema(session.catalog, session.catalog.get(TableEntry, copy.table)).columns

    def evaluate(part: DataFrame) -> None:
        part.createOrReplaceTempView(copy.placeholder)
        frame = spark.sql(select)
        casts = [
            F.col(quote_name(name)).cast(column.type)
            for name, column in zip(frame.columns, columns, strict=False)
        ]
        frame.select(*casts).write.format("noop").mode("overwrite").save()

    return find_bad(raw, ranges, evaluate, limit)


def run_batch(session: Context, name: str) -> BatchOutcome | None:
    """Load the pipe's planned batch (planning one if none is): one commit, once."""
    catalog, spark = session.catalog, session.spark
    pipe = catalog.get(PipeEntry, name)
    batch = plan(catalog, session.settings, pipe)
    if batch is None:
        return None
    failpoints.reached(KAFKA_PLANNED)
    # A schema change cut off from its record is recorded before this batch's newer version.
    target = recorded_schema(catalog, catalog.get(TableEntry, pipe.table))
    ensure_log_intact(target)
    record = batch_record(pipe, batch)
    commit = find(spark, target.location, record, after=batch.table_version)
    recovered = commit is not None
    if commit is None:
        refuse_expectations(target, f"pipe {name}, a Kafka pipe,")
        try:
            _write(session, pipe, batch, record)
        except TooManyBadMessages as error:
            reason = f"pipe {name}: batch {batch.number}: {error.what}"
            stop(catalog, name, reason)
            raise LakeError(
                reason,
                f"nothing of the batch was committed; DROP PIPE {name} and CREATE it again with "
                "a larger max_errors (READ_KAFKA's eleventh argument) or a SELECT that accepts "
                "these messages: it goes on where the table's last batch of this topic and group "
                "ended",
            ) from None
        except Exception as error:
            if not fence_lost(error):
                raise
            recovered = True  # another run of the batch won the race to commit it
        commit = find(spark, target.location, record, after=batch.table_version)
    if commit is None:
        raise LakeError(
            f"pipe {name}: batch {batch.number}'s commit is not in table {pipe.table}",
            "another writer may have committed it under the same fence; run the pipe again",
        )
    bad = decoded((decode(commit.user_metadata, KAFKA_MARKER) or {}).get("bad", []))
    ledger.record_bad_messages(catalog, name, batch.number, bad)
    changes = row_changes(commit.operation or "", commit.operation_metrics)
    record_commit_state(spark, catalog, target, commit.version, changes)
    settled = ledger.settle_batch(
        catalog,
        name,
        batch.number,
        state=BatchState.COMMITTED.value,
        commit_version=commit.version,
        rows=changes[0] if changes else None,
        bad=len(bad),
    )
    return BatchOutcome(name, settled, recovered, _report_lag(session.settings, pipe, settled))


def _report_lag(
    settings: LakeSettings, pipe: PipeEntry, batch: KafkaBatch
) -> dict[int, int] | None:
    """Commit the group's offsets for lag tools, and return the lag behind the topic's latest
    offsets; the pipe's own record is the truth, so a failure here loses nothing."""
    try:
        admin = admin_of(pipe, settings)
        admin.commit(pipe.group_id, pipe.topic, batch.end)
        level = isolation(dict(kafka_source(pipe).options))
        latest = admin.offsets(admin.topic(pipe.topic), "latest", level)
    except LakeError:
        return None
    return {p: max(0, latest[p] - batch.end.get(p, 0)) for p in latest}
