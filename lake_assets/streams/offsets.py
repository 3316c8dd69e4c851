"""Offsets that move only with a committed write, in the same Delta commit as its rows.

A statement that reads streams pins each one's range when it starts. If it writes, it first
claims the streams in the catalog (one consumer at a time per stream; a stream moved since it
was read is refused), then writes with a commit tagged like every commit here; the tag is
looked up in the target's history afterwards (for a volume export, the file named from it in
the volume), and each offset moves if, and only if, the write committed or the statement wrote
nothing at all. A claim left by a killed process is settled the
same way by the next statement that touches the stream, so a crash at any instant leaves the
target and the offset in agreement."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import cache
from typing import Any

import psutil
from pyspark.sql import SparkSession

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import STATEMENT_MARKER, find
from lake_assets.core.delta import Commit, history
from lake_assets.core.errors import LakeError
from lake_assets.streams.changelog import RangeFiles, missing, range_files
from lake_assets.streams.entry import Claim, Landing, StreamEntry, StreamMode
from lake_assets.streams.reading import StreamRead, change_query
from lake_assets.streams.sources import ChangeSource, change_source, find_source, source_type
from lake_assets.volumes.files import export_landed

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
CONSUME_AFTER_COMMIT = "consume-after-commit"
CONSUME_BEFORE_COMMIT = "consume-before-commit"

# VACUUM's default retention: files a commit removed are deleted this long after it.
FILE_RETENTION = timedelta(days=7)


@cache
def owner() -> str:
    """This process, as a claim names it: host, pid and start time (a reused pid differs)."""
    return f"{socket.gethostname()}:{os.getpid()}:{psutil.Process().create_time():.3f}"


def alive(claim_owner: str) -> bool:
    """Whether a claim's process may still commit; one on another host is assumed alive."""
    host, pid, started = claim_owner.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    try:
        return f"{psutil.Process(int(pid)).create_time():.3f}" == started
    except psutil.NoSuchProcess:
        return False


def resolve(spark: SparkSession, catalog: Catalog, entry: StreamEntry) -> StreamEntry:
    """The stream with a dead consumer's claim settled: its offset moved if its write landed."""
    claim = entry.claim
    if claim is None or alive(claim.owner):
        return entry
    return _settle(catalog, entry.name, claim.tag, _landed(spark, catalog, claim))


def _landed(spark: SparkSession, catalog: Catalog, claim: Claim) -> bool:
    """Whether a claim's write landed: its tagged commit is in the table, or, for another kind
    of target, the kind's own check says so (a volume export: its file is in the volume)."""
    if claim.landing is Landing.VOLUME:
        assert claim.path is not None, "a volume claim names its file"
        assert claim.lake_home is not None, "and the LAKE_HOME that opens its volume"
        return export_landed(catalog, claim.target, claim.path, claim.lake_home)
    record = {STATEMENT_MARKER: 1, "tag": claim.tag}
    try:
        return find(spark, claim.target, record, after=claim.after) is not None
    except Exception:  # the target is gone: nothing of it can be kept consistent any more
        return False


def _settle(catalog: Catalog, name: str, tag: str, moved: bool) -> StreamEntry:
    def settle(entry: StreamEntry) -> StreamEntry:
        if entry.claim is None or entry.claim.tag != tag:
            return entry
        if moved:
            return replace(entry, offset=entry.claim.end, initial_pending=False, claim=None)
        return replace(entry, claim=None)

    return catalog.update(StreamEntry, name, settle)


@dataclass(frozen=True)
class Pinned:
    """A stream, its source, the range a statement starting now reads (its offset to the
    source's latest version), the source's commits (newest first) to that version, and the
    files the range wrote when its log could be read."""

    entry: StreamEntry
    source: ChangeSource
    read: StreamRead
    commits: list[Commit]
    files: RangeFiles | None = None

    def query(self, columns: Sequence[str] | None = None) -> str:
        """The stream's rows as Spark SQL: its metadata columns, then `columns` (the source's
        visible columns unless given)."""
        shown = self.source.columns if columns is None else columns
        return change_query(self.entry, self.read, shown, self.commits, self.files)


def pin(spark: SparkSession, catalog: Catalog, name: str) -> Pinned:
    entry = resolve(spark, catalog, catalog.get(StreamEntry, name))
    source = check_source(catalog, entry)
    commits = history(spark, entry.source_location)
    end, earliest = commits[0].version, commits[-1].version
    if entry.offset < end and earliest > entry.offset + 1:
        raise stale(entry, f"the versions after {entry.offset} of {entry.source} have expired")
    read = StreamRead(name, entry.generation, entry.offset, end, entry.initial_pending)
    if read.initial and entry.mode is StreamMode.STANDARD:  # only the snapshot at `end` is read
        return Pinned(entry, source, read, commits)
    files = range_files(spark, entry.source_location, entry.offset, end)
    if files is not None and missing(entry.source_location, files):
        raise stale(
            entry,
            f"files that the changes after version {entry.offset} of {entry.source} need were "
            "removed (VACUUM)",
        )
    return Pinned(entry, source, read, commits, files)


def check_source(catalog: Catalog, entry: StreamEntry) -> ChangeSource:
    """The stream's source; one that was dropped or replaced can never be read again."""
    found = find_source(catalog, entry.source_kind, entry.source)
    if found is None:
        raise stale(entry, f"its source {entry.source} was dropped")
    source = change_source(found) if isinstance(found, source_type(entry.source_kind)) else None
    if source is None or source.location != entry.source_location:
        raise stale(entry, f"its source {entry.source} was replaced")
    return source


def stale(entry: StreamEntry, why: str) -> LakeError:
    return LakeError(
        f"stream {entry.name} is stale: {why}",
        f"recreate it with CREATE OR REPLACE TABLE STREAM {entry.name} ON … , or move it with "
        f"ALTER STREAM {entry.name} SET OFFSET LATEST",
    )


def consuming(
    spark: SparkSession,
    catalog: Catalog,
    reads: Sequence[StreamRead],
    target: str,
    after: int,
    record: dict[str, Any],
) -> AbstractContextManager[None]:
    """A write to the table at `target` (read at version `after`), committed with `record`,
    that consumes `reads`."""
    return consuming_as(spark, catalog, reads, Claim(record["tag"], target, after, 0, owner()))


@contextmanager
def consuming_as(
    spark: SparkSession, catalog: Catalog, reads: Sequence[StreamRead], claim: Claim
) -> Iterator[None]:
    """A write that lands as `claim` says and consumes `reads`: each stream is claimed up to the
    version it was read to, and moves afterwards if, and only if, the write landed."""
    claimed: list[str] = []
    succeeded = False
    try:
        for read in reads:
            _claim(spark, catalog, read, replace(claim, end=read.end))
            claimed.append(read.stream)
        if claimed:
            failpoints.reached(CONSUME_BEFORE_COMMIT)
        yield
        if claimed:
            failpoints.reached(CONSUME_AFTER_COMMIT)
        succeeded = True
    finally:
        if claimed:
            landed = succeeded or _landed(spark, catalog, claim)
            for name in claimed:
                _settle(catalog, name, claim.tag, landed)


def _claim(spark: SparkSession, catalog: Catalog, read: StreamRead, claim: Claim) -> None:
    resolve(spark, catalog, catalog.get(StreamEntry, read.stream))

    def take(entry: StreamEntry) -> StreamEntry:
        if entry.claim is not None:
            raise LakeError(
                f"stream {entry.name} is being consumed by another statement "
                f"(process {entry.claim.owner})",
                "run this statement again when that one has finished; nothing was written",
            )
        if (entry.generation, entry.offset, entry.initial_pending) != (
            read.generation,
            read.start,
            read.initial,
        ):
            raise LakeError(
                f"stream {entry.name} moved since it was read "
                f"(its offset is now version {entry.offset})",
                "read the stream again and repeat the write; nothing was written",
            )
        return replace(entry, claim=claim)

    catalog.update(StreamEntry, read.stream, take)
