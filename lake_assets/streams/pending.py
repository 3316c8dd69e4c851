"""What a stream has left to consume, read from its source's Delta log alone: sensors and
tasks' WHEN ask it every few seconds, and must never start Spark."""

from __future__ import annotations

from lake_assets.core.delta import log_actions, log_versions
from lake_assets.streams.changelog import data_changes
from lake_assets.streams.entry import StreamEntry


def pending_versions(entry: StreamEntry) -> list[int] | None:
    """The source's commits after the stream's offset that changed data, oldest first; None
    when the source's log is not on a local filesystem (the caller cannot tell without Spark)."""
    versions = log_versions(entry.source_location)
    if versions is None:
        return None
    return sorted(
        version
        for version in versions
        if version > entry.offset
        and data_changes(log_actions(entry.source_location, version) or ())
    )


def has_data(entry: StreamEntry) -> bool:
    """STREAM_HAS_DATA: initial rows still to show, or a data commit after the offset; a source
    whose log cannot be read here is assumed to have some (the statement then finds out)."""
    if entry.initial_pending:
        return True
    pending = pending_versions(entry)
    return pending is None or bool(pending)
