"""What an export reads: its source, checked to be keyed and tracking its changes, and the
commits of a range, found by their times from where the status table says the export before it
left off (else at the oldest commit kept), so that a range exported in full is not read again."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import (
    Commit,
    commits_from,
    history,
    latest_version,
    log_actions,
    log_versions,
    row_changes,
)
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.exports import status
from lake_assets.exports.grammar import TimeRange
from lake_assets.streams.changelog import data_changes
from lake_assets.tables.entry import TableEntry

Source = TableEntry | DynamicTableEntry


@dataclass(frozen=True)
class Span:
    """What one export of a range read: the commits in it that changed data ((version, time in
    ms), oldest first), where it started scanning, the last version it covered, how many
    commits it opened, and whether no later commit can fall in the range."""

    commits: tuple[tuple[int, int], ...]
    first_version: int
    last_version: int
    versions_read: int
    complete: bool
    rows_changed: int | None  # by the commits, as their metrics say; None when one does not

    def records_at_most(self, values: int) -> int | None:
        """A bound on the records: a changed row gives one per value column at most."""
        return None if self.rows_changed is None else self.rows_changed * max(values, 1)


def source_of(catalog: Catalog, name: str) -> Source:
    """The table or dynamic table an export reads, keyed and with its changes tracked."""
    entry = catalog.relation(name)
    if not isinstance(entry, TableEntry | DynamicTableEntry):
        raise LakeError(
            f"{name} is a {entry.LABEL}: a changelog export reads a table or a dynamic table",
            f"export the table it reads instead of {name}",
        )
    words = "ALTER TABLE" if isinstance(entry, TableEntry) else "ALTER DYNAMIC TABLE"
    if not entry.primary_key:
        raise LakeError(
            f"{entry.LABEL} {name} has no primary key, which a changelog export needs",
            f"declare one with {words} {name} SET PRIMARY KEY (col, …)",
        )
    if isinstance(entry, TableEntry) and not entry.change_tracking:
        raise LakeError(
            f"table {name} does not track its changes, which a changelog export reads",
            f"ALTER TABLE {name} SET PROPERTIES ('change_tracking' = 'true') first; changes "
            "committed from then on can be exported",
        )
    return entry


def key_columns(source: Source, key: Iterable[str]) -> tuple[list[Column], list[Column]]:
    """The source's key columns in key order, and its other columns in table order."""
    by_name = {column.name.lower(): column for column in source.columns}
    missing = [name for name in key if name.lower() not in by_name]
    if missing:
        raise LakeError(
            f"{source.LABEL} {source.name} has no column {missing[0]} of its export's key",
            "DROP the changelog export and CREATE it again for the table's key",
        )
    keys = [by_name[name.lower()] for name in key]
    return keys, [column for column in source.columns if column not in keys]


def scan(
    spark: SparkSession, source: Source, window: TimeRange, runs: list[status.Status]
) -> Span | None:
    """The range's commits, scanned from where the status says to start; None when the range
    was exported in full, or as far as the table's newest commit, already."""
    latest_known = latest_version(spark, source.location)
    same = [run for run in runs if (run.range_start, run.range_end) == (window.start, window.end)]
    if same and (same[-1].complete or same[-1].last_version >= latest_known):
        return None
    before = [run.last_version for run in runs if run.range_end <= window.start]
    oldest = _oldest(spark, source.location)
    begin = same[-1].first_version if same else max(before) + 1 if before else oldest
    if begin < oldest:
        raise LakeError(
            f"{source.LABEL} {source.name}'s history before version {oldest} is no longer kept, "
            f"and the export needs it from version {begin}",
            "export ranges after the oldest commit kept (DESC HISTORY shows it), or keep "
            "history longer (Delta's delta.logRetentionDuration)",
        )
    commits: list[tuple[int, int]] = []
    read, last, complete = 0, begin - 1, False
    changed: int | None = 0
    for commit in commits_from(spark, source.location, begin):
        read += 1
        millis = _millis(commit)
        if millis >= window.end:
            complete = True
            break
        last = commit.version
        if millis >= window.start and _changes_data(source.location, commit):
            commits.append((commit.version, millis))
            rows = row_changes(commit.operation or "", commit.operation_metrics)
            changed = None if changed is None or rows is None else changed + sum(rows)
    complete = complete or time.time() * 1000 >= window.end
    return Span(tuple(commits), begin, last, read, complete, changed)


def _oldest(spark: SparkSession, location: str) -> int:
    """The oldest commit kept (log retention removes older ones)."""
    versions = log_versions(location)
    return versions[-1] if versions else history(spark, location)[-1].version


def _millis(commit: Commit) -> int:
    return int(commit.timestamp.replace(tzinfo=UTC).timestamp() * 1000)


def _changes_data(location: str, commit: Commit) -> bool:
    """Whether the commit added or removed rows: others (CREATE, properties) have no records,
    and no change data either when change tracking was turned on after them."""
    actions = log_actions(location, commit.version)
    if actions is not None:
        return bool(data_changes(actions))
    changes = row_changes(commit.operation or "", commit.operation_metrics)
    return changes is None or any(changes)
