"""Bad messages: when a batch's SELECT fails on some messages (a cast, from_json in ANSI mode),
the batch loads the others once those, at most READ_KAFKA's max_errors of them, are found and
set aside with their errors; one more fails the batch and nothing of it is committed.

They are found by halving the batch, its messages read once into Spark's memory: a part whose
SELECT (cast to the table's columns, as INSERT casts) runs is good; a failing message alone is
bad. The search stops at the first message past max_errors, so it costs about
log2(messages) small Spark jobs per bad message, and only in a batch that failed."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import asdict
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lake_assets.core.errors import LakeError
from lake_assets.core.spark_errors import translate_spark_error
from lake_assets.pipes.kafka.ledger import BadMessage

# A bad message's value is kept up to this many bytes: it rides in its batch's commit record.
VALUE_LIMIT = 64 * 1024

Ranges = dict[int, tuple[int, int]]


class TooManyBadMessages(LakeError):
    """More bad messages in a batch than max_errors allows: the batch fails as a whole."""


def _where(ranges: Ranges) -> Column:
    parts = [
        (F.col("partition") == p) & (F.col("offset") >= lo) & (F.col("offset") < hi)
        for p, (lo, hi) in ranges.items()
        if hi > lo
    ]
    return reduce(lambda a, b: a | b, parts, F.lit(False))


def _halves(ranges: Ranges) -> list[Ranges]:
    """Two parts of about half the messages each: partitions apart, else one offset range cut."""
    live = {p: r for p, r in ranges.items() if r[1] > r[0]}
    if len(live) > 1:
        keys = sorted(live)
        middle = len(keys) // 2
        return [{p: live[p] for p in keys[:middle]}, {p: live[p] for p in keys[middle:]}]
    ((partition, (lo, hi)),) = live.items()
    cut = (lo + hi) // 2
    return [{partition: (lo, cut)}, {partition: (cut, hi)}]


def _single(ranges: Ranges) -> bool:
    return sum(hi - lo for lo, hi in ranges.values()) <= 1


def error_text(error: Exception) -> str:
    translated = translate_spark_error(error, {})
    if translated is not None:
        return translated.what
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _bad(raw: DataFrame, ranges: Ranges, error: Exception) -> BadMessage | None:
    found = raw.where(_where(ranges)).collect()
    if not found:
        return None  # a gap (a transaction marker, compaction): no message there
    (row,) = found
    value = row["value"]
    return BadMessage(
        row["partition"],
        row["offset"],
        None if row["timestamp"] is None else row["timestamp"].isoformat(),
        None if row["key"] is None else bytes(row["key"]),
        None if value is None else bytes(value)[:VALUE_LIMIT],
        error_text(error),
    )


def find_bad(
    raw: DataFrame, ranges: Ranges, evaluate: Callable[[DataFrame], None], limit: int
) -> list[BadMessage]:
    """The messages of `raw` (READ_KAFKA's columns, `ranges` of offsets) on which `evaluate`
    fails; TooManyBadMessages as soon as more than `limit` are found."""
    bad: list[BadMessage] = []
    parts = [ranges]
    while parts:
        part = parts.pop()
        try:
            evaluate(raw.where(_where(part)))
            continue
        except LakeError:
            raise
        except Exception as error:  # a message's data; the raw read itself already succeeded
            if not _single(part):
                parts.extend(reversed(_halves(part)))
                continue
            message = _bad(raw, part, error)
        if message is not None:
            bad.append(message)
        if len(bad) > limit:
            first = bad[0]
            raise TooManyBadMessages(
                f"more than {limit} bad messages in the batch; the first, partition "
                f"{first.partition} offset {first.offset}: {first.error}",
                "",
            )
    return sorted(bad, key=lambda m: (m.partition, m.offset))


def good_messages(raw: DataFrame, bad: list[BadMessage]) -> DataFrame:
    """The batch without its bad messages."""
    if not bad:
        return raw
    keys = reduce(
        lambda a, b: a | b,
        [(F.col("partition") == m.partition) & (F.col("offset") == m.offset) for m in bad],
    )
    return raw.where(~keys)


def encoded(messages: list[BadMessage]) -> list[dict[str, Any]]:
    """Bad messages as a commit record carries them (bytes as base64)."""
    return [
        {
            **asdict(m),
            "key": None if m.key is None else base64.b64encode(m.key).decode(),
            "value": None if m.value is None else base64.b64encode(m.value).decode(),
        }
        for m in messages
    ]


def decoded(records: list[dict[str, Any]]) -> list[BadMessage]:
    return [
        BadMessage(
            **{
                **r,
                "key": None if r["key"] is None else base64.b64decode(r["key"]),
                "value": None if r["value"] is None else base64.b64decode(r["value"]),
            }
        )
        for r in records
    ]
