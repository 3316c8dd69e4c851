"""Kafka pipes' ledger: each batch's offset range, planned once and kept until its commit lands
(so that a retried batch reads the same messages), and the bad messages of committed batches,
indexed from their commit records for SHOW / DESC."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import sqlalchemy as sa

from lake_assets.core.catalog import Catalog
from lake_assets.core.database import TEXT, owned_table
from lake_assets.core.entries import now_utc, typed
from lake_assets.core.history import stored

# The first key of a Kafka batch's commit record.
KAFKA_MARKER = "lake_kafka"


class BatchState(StrEnum):
    """A Kafka pipe's batch: its range is planned (and retried as is) until its commit lands."""

    PLANNED = "PLANNED"
    COMMITTED = "COMMITTED"


@dataclass(frozen=True)
class KafkaBatch:
    """Batch `number` of a Kafka pipe: offsets [start, end) per partition, fixed when planned;
    its commit is looked for in the target after `table_version` (its version then)."""

    pipe: str
    number: int
    start: dict[int, int]
    end: dict[int, int]
    table_version: int
    planned_at: str
    state: BatchState = BatchState.PLANNED
    finished_at: str | None = None
    commit_version: int | None = None
    messages: int | None = None
    rows: int | None = None
    bad: int | None = None
    attempts: int = 0
    error: str | None = None


@dataclass(frozen=True)
class BadMessage:
    """A Kafka message the pipe's SELECT failed on, kept aside with its error (its value cut at
    the pipe's limit, so that a commit record stays small)."""

    partition: int
    offset: int
    timestamp: str | None
    key: bytes | None
    value: bytes | None
    error: str


# A pipe's batches stay when it is replaced (OR REPLACE keeps its place in the topic); DROP PIPE
# forgets them.
_batches = owned_table(
    "kafka_batches",
    None,
    sa.Column("pipe", TEXT, primary_key=True),
    sa.Column("number", sa.BigInteger, primary_key=True),
    sa.Column("start", TEXT, nullable=False),
    sa.Column("end", TEXT, nullable=False),
    sa.Column("table_version", sa.BigInteger, nullable=False),
    sa.Column("planned_at", TEXT, nullable=False),
    sa.Column("state", TEXT, nullable=False),
    sa.Column("finished_at", TEXT),
    sa.Column("commit_version", sa.BigInteger),
    sa.Column("messages", sa.BigInteger),
    sa.Column("rows", sa.BigInteger),
    sa.Column("bad", sa.BigInteger),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("error", TEXT),
)
_bad_messages = owned_table(
    "kafka_errors",
    None,
    sa.Column("pipe", TEXT, primary_key=True),
    sa.Column("partition", sa.Integer, primary_key=True),
    sa.Column("offset", sa.BigInteger, primary_key=True),
    sa.Column("batch", sa.BigInteger, nullable=False),
    sa.Column("timestamp", TEXT),
    sa.Column("key", sa.LargeBinary),
    sa.Column("value", sa.LargeBinary),
    sa.Column("error", TEXT, nullable=False),
)


def plan_batch(catalog: Catalog, batch: KafkaBatch) -> KafkaBatch:
    """Store a batch unless its number is planned already; the stored one is returned, so that
    a planned range never changes."""
    insert = catalog.database.insert(_batches).values(stored(batch))
    with catalog.database.writing() as conn:
        conn.execute(insert.on_conflict_do_nothing())
        row = conn.execute(_batch_query(batch.pipe, batch.number)).one()
    return _batch(row)


def batches(catalog: Catalog, pipe: str, limit: int | None = None) -> list[KafkaBatch]:
    """A pipe's batches, newest first."""
    query = (
        sa.select(_batches)
        .where(_batches.c.pipe == pipe)
        .order_by(_batches.c.number.desc())
        .limit(limit)
    )
    with catalog.database.reading() as conn:
        return [_batch(row) for row in conn.execute(query).all()]


def settle_batch(catalog: Catalog, pipe: str, number: int, **outcome: Any) -> KafkaBatch:
    """Record how a batch's attempt ended (COMMITTED with its version and counts, or the error of
    a failed attempt)."""
    with catalog.database.writing() as conn:
        conn.execute(
            sa.update(_batches)
            .where(_batches.c.pipe == pipe, _batches.c.number == number)
            .values(attempts=_batches.c.attempts + 1, finished_at=now_utc(), **outcome)
        )
        return _batch(conn.execute(_batch_query(pipe, number)).one())


def forget_batches(catalog: Catalog, pipe: str) -> None:
    """A dropped pipe's batches and bad messages."""
    with catalog.database.writing() as conn:
        conn.execute(sa.delete(_batches).where(_batches.c.pipe == pipe))
        conn.execute(sa.delete(_bad_messages).where(_bad_messages.c.pipe == pipe))


def record_bad_messages(
    catalog: Catalog, pipe: str, batch: int, messages: list[BadMessage]
) -> None:
    """Index a committed batch's bad messages (each once: its commit record holds them)."""
    if not messages:
        return
    values = [{"pipe": pipe, "batch": batch, **stored(message)} for message in messages]
    with catalog.database.writing() as conn:
        conn.execute(catalog.database.insert(_bad_messages).values(values).on_conflict_do_nothing())


def bad_messages(catalog: Catalog, pipe: str) -> list[tuple[int, BadMessage]]:
    """A pipe's bad messages with their batch, by partition and offset."""
    query = (
        sa.select(_bad_messages)
        .where(_bad_messages.c.pipe == pipe)
        .order_by(_bad_messages.c.partition, _bad_messages.c.offset)
    )
    with catalog.database.reading() as conn:
        rows = conn.execute(query).all()
    return [(row.batch, typed(BadMessage, row._asdict())) for row in rows]


def _batch_query(pipe: str, number: int) -> sa.Select:
    return sa.select(_batches).where(_batches.c.pipe == pipe, _batches.c.number == number)


def _batch(row: sa.Row) -> KafkaBatch:
    values = row._asdict()
    return typed(
        KafkaBatch,
        {**values, "start": json.loads(values["start"]), "end": json.loads(values["end"])},
    )
