"""Streams as the session consumes them: a statement that reads a stream pins its range when it
is bound, and the stream moves on only with the write or export that statement lands."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from lake_assets.core.kind import Consumption, Context
from lake_assets.streams import offsets
from lake_assets.streams.entry import Claim, Landing, StreamEntry
from lake_assets.streams.reading import StreamRead


def _pin(context: Context, name: str) -> offsets.Pinned:
    return offsets.pin(context.spark, context.catalog, name)


def _reads(reads: Sequence[Any]) -> list[StreamRead]:
    return [read for read in reads if isinstance(read, StreamRead)]


def _consuming(
    context: Context, reads: Sequence[Any], location: str, after: int, record: dict[str, Any]
) -> AbstractContextManager[None]:
    return offsets.consuming(context.spark, context.catalog, _reads(reads), location, after, record)


def _exporting(
    context: Context, reads: Sequence[Any], volume: str, path: str, tag: str
) -> AbstractContextManager[None]:
    """The exported file at `path` is how a later process tells the export landed."""
    home = str(context.settings.lake_home)
    claim = Claim(tag, volume, 0, 0, offsets.owner(), Landing.VOLUME, path, home)
    return offsets.consuming_as(context.spark, context.catalog, _reads(reads), claim)


CONSUMPTION = Consumption(StreamEntry, _pin, _consuming, _exporting)
