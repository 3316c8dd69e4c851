"""CREATE and DESC of Kafka pipes: a pipe reads one topic with its own consumer group, from the
topic's earliest offsets on; DESC shows per partition what is committed, the latest offset and
the lag, read from the catalog and the broker (no Spark)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.core.delta import log_versions
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.core.ticks import tick_period
from lake_assets.pipes.entry import PipeEntry, PipeKind
from lake_assets.pipes.grammar import CreatePipe, KafkaCopy
from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.batches import admin_of, kafka_source, resume_point
from lake_assets.pipes.kafka.ledger import BatchState, KafkaBatch
from lake_assets.tables.entry import TableEntry
from resources.kafka import KafkaAdmin, isolation, resolved

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def create_kafka_pipe(session: Context, stmt: CreatePipe, copy: KafkaCopy) -> Result:
    """Register the pipe once its table, topic and group check out; it reads nothing yet."""
    catalog = session.catalog
    table = catalog.get(TableEntry, copy.table)
    source = copy.kafka
    sharing = [
        p.name
        for p in catalog.entries(PipeEntry)
        if p.pipe_kind is PipeKind.KAFKA
        and (p.topic, p.group_id) == (source.topic, source.group_id)
    ]
    if sharing:
        raise LakeError(
            f"pipe {sharing[0]} already reads topic {source.topic} with group {source.group_id}",
            "give each pipe its own consumer group id (READ_KAFKA's fourth argument)",
        )
    admin = KafkaAdmin(source.bootstrap, resolved(dict(source.options), session.settings.lake_home))
    isolation(dict(source.options))  # a bad isolation.level is CREATE's error, not a run's
    topic = admin.topic(source.topic)
    local = log_versions(table.location) is not None  # a local log is read without Spark
    resume = resume_point(None if local else session.spark, table, source.topic, source.group_id)
    catalog.add(
        PipeEntry(
            name=stmt.name,
            created_at=now_utc(),
            table=copy.table,
            copy_statement=stmt.copy_text,
            virtual_cluster=stmt.virtual_cluster,
            comment=stmt.comment,
            pipe_kind=PipeKind.KAFKA,
            topic=source.topic,
            topic_id=topic.id,
            group_id=source.group_id,
            batch_interval_seconds=stmt.batch_interval_seconds,
            batch_size_per_partition=stmt.batch_size_per_partition,
            resume_from=tuple(sorted(resume.items())),
        )
    )
    start = (
        "where the table's last batch of this topic and group ended"
        if resume
        else "the group's committed offsets, else the earliest"
    )
    return Result.status(
        f"created pipe {stmt.name}: RUNNING, reads topic {source.topic} ({len(topic.partitions)} "
        f"partitions, group {source.group_id}) into {copy.table} every "
        f"{tick_period(stmt.batch_interval_seconds)} s from {start} "
        "(with the Dagster daemon running)"
    )


def _offsets_text(offsets: dict[int, int] | None) -> str | None:
    return None if offsets is None else ", ".join(f"{p}:{o}" for p, o in sorted(offsets.items()))


def _positions(session: Context, pipe: PipeEntry) -> tuple[dict[int, int] | None, str | None]:
    """The topic's latest offsets, or why they cannot be read now."""
    try:
        admin = admin_of(pipe, session.settings)
        topic = admin.topic(pipe.topic)
        level = isolation(dict(kafka_source(pipe).options))
        return admin.offsets(topic, "latest", level), None
    except LakeError as error:
        return None, str(error)


def _last_committed(batches: list[KafkaBatch]) -> KafkaBatch | None:
    return next((b for b in batches if b.state == BatchState.COMMITTED), None)


def describe_kafka_pipe(session: Context, pipe: PipeEntry) -> Result:
    batches = ledger.batches(session.catalog, pipe.name, limit=2)
    done = _last_committed(batches)
    committed = done.end if done is not None else {}
    latest, unreachable = _positions(session, pipe)
    lag = None
    if latest is not None:
        lag = {p: latest[p] - committed.get(p, 0) for p in latest}
    last = batches[0] if batches else None
    source = kafka_source(pipe)
    return Result.properties(
        **{
            "name": pipe.name,
            "pipe_status": pipe.status,
            "pipe_kind": PipeKind.KAFKA,
            "input_name": pipe.topic,
            "output_name": pipe.table,
            "copy_statement": pipe.copy_statement,
            "virtual_cluster": pipe.virtual_cluster,
            "bootstrap_servers": source.bootstrap,
            "group_id": pipe.group_id,
            "batch_interval_seconds": tick_period(pipe.batch_interval_seconds),
            "batch_size_per_kafka_partition": pipe.batch_size_per_partition,
            "max_errors": source.max_errors,
            "committed_offsets": _offsets_text(committed) or None,
            "latest_offsets": _offsets_text(latest),
            "lag": _offsets_text(lag),
            "last_batch": None
            if last is None
            else f"{last.number} {last.state} {last.finished_at or last.planned_at}",
            "invalid_reason": pipe.invalid_reason or unreachable,
            "comment": pipe.comment,
            "created_at": pipe.created_at,
        }
    )
