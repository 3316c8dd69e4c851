"""CREATE / ALTER … SET OFFSET / SHOW / DESC / DROP of table streams."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from lake_assets.core.delta import (
    Commit,
    delta_ref,
    history,
    latest_version,
    sql_string,
    table_properties,
)
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import drop_object, name_taken
from lake_assets.core.results import Result
from lake_assets.core.versions import LATEST, version_at
from lake_assets.sql.statements import DescribeObject
from lake_assets.streams import offsets
from lake_assets.streams.entry import StreamEntry, StreamMode
from lake_assets.streams.grammar import SOURCE_KINDS, AlterStreamOffset, CreateStream
from lake_assets.streams.sources import ChangeSource, change_source, find_source, source_type
from lake_assets.tables.schema_changes import DeltaFeature

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# How a stream names the newest version, for a time still to come.
_NEWEST = "for the newest version leave out AT, or use ALTER STREAM … SET OFFSET LATEST"
_CHANGE_FEED = "delta.enableChangeDataFeed"
_ROW_TRACKING = "delta.enableRowTracking"
# Delta operations that only add or remove data files: they never change a table's properties.
_DATA_ONLY = frozenset(
    {
        "WRITE",
        "STREAMING UPDATE",
        "UPDATE",
        "DELETE",
        "MERGE",
        "OPTIMIZE",
        "VACUUM START",
        "VACUUM END",
    }
)


def create_stream(session: Context, stmt: CreateStream) -> Result:
    catalog = session.catalog
    taken = (
        None if stmt.or_replace else name_taken(session, StreamEntry, stmt.name, stmt.if_not_exists)
    )
    if taken is not None:
        return taken
    source = _source(session, stmt)
    spark = session.spark
    if stmt.mode is StreamMode.STANDARD and _mapped(spark, source.location):
        raise LakeError(
            f"{source.label} {source.name} has had columns renamed or dropped: Delta's reader of "
            "net changes by row cannot read a table whose columns it maps",
            "create it WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY') (its inserted rows), "
            f"or read {source.name} with a dynamic table",
        )
    commits = history(spark, source.location)
    offset = version_at(stmt.at, commits, source.name, _NEWEST)
    wanted = _tracking(stmt.mode, stmt.show_initial_rows)
    if stmt.at != LATEST:
        # Before anything is turned on: a refused CREATE changes nothing.
        _check_tracked(spark, source.name, source.location, wanted, offset, commits)
    turned_on = _track_changes(session, source, wanted)
    if turned_on:
        offset = latest_version(spark, source.location)
    entry = StreamEntry(
        stmt.name,
        source.name,
        source.kind,
        source.location,
        stmt.mode,
        stmt.show_initial_rows,
        offset,
        initial_pending=stmt.show_initial_rows,
        comment=stmt.comment,
    )
    if stmt.or_replace:
        # Consumers that read the replaced stream must not move the new one.
        old = catalog.find(StreamEntry, stmt.name)
        catalog.replace(replace(entry, generation=old.generation + 1 if old else 0))
    else:
        catalog.add(entry)
    note = f"; turned on change tracking for {source.label} {source.name}" if turned_on else ""
    return Result.status(
        f"created stream {stmt.name} on {source.label} {source.name} at version {offset}{note}"
    )


def _source(session: Context, stmt: CreateStream) -> ChangeSource:
    wanted = source_type(stmt.source_kind)
    found = find_source(session.catalog, stmt.source_kind, stmt.source)
    if found is None:
        raise LakeError(
            f"cannot create stream {stmt.name}: {wanted.LABEL} {stmt.source} does not exist",
            f"check the name with {wanted.SHOW}",
        )
    if found.stands_for() is not None:  # a view: its query's relations have the changes
        mistaken = found.mistaken_for(wanted)
        raise LakeError(f"cannot create stream {stmt.name}: {mistaken.what}", mistaken.fix)
    if not isinstance(found, wanted):
        words = [" ".join(words) for words, kind in SOURCE_KINDS.items() if kind == found.kind()]
        raise LakeError(
            f"cannot create stream {stmt.name}: {stmt.source} is a {found.LABEL}",
            f"write ON {words[0]} {stmt.source}"
            if words
            else "create streams on tables, dynamic tables and volumes",
        )
    return change_source(found)


def _mapped(spark: SparkSession, location: str) -> bool:
    """Whether Delta maps the table's columns to other names in its files (column mapping)."""
    return table_properties(spark, location).get(DeltaFeature.COLUMN_MAPPING, "none") != "none"


def _tracking(mode: StreamMode, initial: bool) -> list[str]:
    """What a stream reads by: the change data feed, and row tracking, which STANDARD's row
    identity and the initial rows' versions need."""
    return [_CHANGE_FEED] + ([_ROW_TRACKING] if mode is StreamMode.STANDARD or initial else [])


def _untracked(
    spark: SparkSession, location: str, wanted: list[str], version: int | None
) -> list[str]:
    """The `wanted` properties that are off at `version` (None: now)."""
    properties = table_properties(spark, location, version)
    return [key for key in wanted if properties.get(key, "false").lower() != "true"]


def _track_changes(session: Context, source: ChangeSource, wanted: list[str]) -> bool:
    """Turn on what a stream reads by; whether anything had to be turned on. The catalog marks
    the source tracked either way: a directory table has its change feed from birth, and the
    mark is what keeps a volume's directory current."""
    spark = session.spark
    location = source.location
    missing = _untracked(spark, location, wanted, None)
    if missing:
        assignments = ", ".join(f"{sql_string(key)} = 'true'" for key in missing)
        spark.sql(f"ALTER TABLE {delta_ref(location)} SET TBLPROPERTIES ({assignments})")
    source.mark_tracked(session.catalog)
    return bool(missing)


def _check_tracked(
    spark: SparkSession,
    source: str,
    location: str,
    wanted: list[str],
    offset: int,
    commits: list[Commit],
) -> None:
    """Refuse an offset whose later changes were not all tracked: tracking must be on at the
    offset and stay on, so the offset's table state and every commit that may have changed a
    property since (anything but a data operation) are looked at, from the Delta log."""
    changed = (c.version for c in commits if c.version > offset and c.operation not in _DATA_ONLY)
    versions = [offset, *sorted(changed)]
    for version in versions:
        if _untracked(spark, location, wanted, version):
            raise LakeError(
                f"{source} had no change tracking at version {version}",
                "pick a version from when change tracking was on, or leave out AT",
            )


def alter_offset(session: Context, stmt: AlterStreamOffset) -> Result:
    catalog = session.catalog
    entry = catalog.get(StreamEntry, stmt.name)
    offsets.check_source(catalog, entry)
    spark = session.spark
    commits = history(spark, entry.source_location)
    version = version_at(stmt.to, commits, entry.source, _NEWEST)
    wanted = _tracking(entry.mode, initial=False)
    _check_tracked(spark, entry.source, entry.source_location, wanted, version, commits)
    catalog.update(
        StreamEntry,
        stmt.name,
        lambda e: replace(
            e, offset=version, generation=e.generation + 1, claim=None, initial_pending=False
        ),
    )
    return Result.status(f"stream {stmt.name} is now at version {version} (was {entry.offset})")


def show_streams(session: Context) -> Result:
    return Result(
        [
            "name",
            "source",
            "source_kind",
            "mode",
            "show_initial_rows",
            "offset",
            "comment",
            "created_at",
        ],
        [
            (
                e.name,
                e.source,
                e.source_kind.upper(),
                e.mode.value,
                e.show_initial_rows,
                e.offset,
                e.comment,
                e.created_at,
            )
            for e in session.catalog.entries(StreamEntry)
        ],
    )


def describe_stream(session: Context, stmt: DescribeObject) -> Result:
    spark = session.spark
    entry = session.catalog.get(StreamEntry, stmt.name)
    stale_reason = None
    commits: list[Commit] = []
    try:  # pinning settles a dead consumer's claim and reads the source's history once
        pinned = offsets.pin(spark, session.catalog, stmt.name)
        entry, commits = pinned.entry, pinned.commits
    except LakeError as error:
        stale_reason = error.what
    times = {commit.version: commit.timestamp for commit in commits}
    pending = [c for c in commits if c.version > entry.offset]
    # Files a commit removes become vacuumable FILE_RETENTION after it: the oldest pending
    # commit's, or the offset's while nothing is pending.
    since = pending[-1].timestamp if pending else times.get(entry.offset)
    return Result.properties(
        name=entry.name,
        source=entry.source,
        source_kind=entry.source_kind.upper(),
        mode=entry.mode.value,
        show_initial_rows=entry.show_initial_rows,
        offset_version=entry.offset,
        offset_time=times.get(entry.offset),
        source_latest_version=commits[0].version if commits else None,
        pending_commits=len(pending),
        stale=stale_reason is not None,
        stale_reason=stale_reason,
        stale_after=since + offsets.FILE_RETENTION if since else None,
        consumer=entry.claim.owner if entry.claim else None,
        comment=entry.comment,
        created_at=entry.created_at,
    )


drop_stream = drop_object(StreamEntry)
