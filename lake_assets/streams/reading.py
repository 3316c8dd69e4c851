"""A stream's rows for one range of its source's versions, as one Spark SQL query: Delta's net
changes by row id (row tracking) for STANDARD, the change data feed's inserts for APPEND_ONLY.
Each row carries the version that wrote its image and that commit's time, as the seed's outputs
show. The query is plain text, so a statement inlines it and a session API frame is built from
it, on a local session and over Spark Connect alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lake_assets.core.delta import Commit, delta_ref, quote_name, sql_string
from lake_assets.core.states import ChangeType, StreamMode
from lake_assets.streams.entry import StreamEntry

CHANGE_TYPE = "__change_type"
COMMIT_VERSION = "__commit_version"
COMMIT_TIMESTAMP = "__commit_timestamp"
METADATA_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)

# Delta's change types, as the seed names them.
_CHANGE_TYPES = {
    "insert": ChangeType.INSERT,
    "update_preimage": ChangeType.UPDATE_BEFORE,
    "update_postimage": ChangeType.UPDATE_AFTER,
    "delete": ChangeType.DELETE,
}
_VERSION = "__lake_image_version"
_TIME = "__lake_image_time"


@dataclass(frozen=True)
class StreamRead:
    """What one statement reads of a stream: the changes after `start` up to `end` (pinned when
    the statement began), with the rows at the offset first when `initial`."""

    stream: str
    generation: int
    start: int
    end: int
    initial: bool


def change_query(
    entry: StreamEntry, read: StreamRead, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """The stream's rows: `__change_type`, `__commit_version`, `__commit_timestamp`, then the
    source's `columns`; `commits` are the source's, for the times of old row images."""
    location = entry.source_location
    if entry.mode is StreamMode.APPEND_ONLY:
        inserted = _inserted(location, read, columns)
        if not read.initial:
            return inserted
        return f"{_snapshot(location, read.start, columns, commits)} UNION ALL {inserted}"
    if read.initial:
        return _snapshot(location, read.end, columns, commits)
    if read.start >= read.end:
        return _nothing(location, read.end, columns)
    return _net_changes(location, read, columns, commits)


def _net_changes(
    location: str, read: StreamRead, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """The net change per row id; UPDATE_BEFORE and DELETE rows show the image at the offset."""
    cases = " ".join(
        f"WHEN {sql_string(delta)} THEN {sql_string(seed.value)}"
        for delta, seed in _CHANGE_TYPES.items()
    )
    changes = (
        f"SELECT CASE _change_type {cases} END AS {CHANGE_TYPE}, {_select(columns)}, "
        f"_metadata.row_commit_version AS {_VERSION} "
        f"FROM {delta_ref(location)} CHANGES FROM VERSION {int(read.start)} EXCLUSIVE "
        f"TO VERSION {int(read.end)} "
        "WITH ('deduplicationMode' = 'netChanges', 'computeUpdates' = 'true')"
    )
    return _stamped(changes, read.end, columns, commits)


def _inserted(location: str, read: StreamRead, columns: Sequence[str]) -> str:
    """The rows inserted after the offset, with the values they were inserted with."""
    if read.start >= read.end:
        return _nothing(location, read.end, columns)
    return (
        f"SELECT {_literal(ChangeType.INSERT)} AS {CHANGE_TYPE}, "
        f"_commit_version AS {COMMIT_VERSION}, _commit_timestamp AS {COMMIT_TIMESTAMP}, "
        f"{_select(columns)} FROM table_changes_by_path({sql_string(location)}, "
        f"{int(read.start) + 1}, {int(read.end)}) WHERE _change_type = 'insert'"
    )


def _snapshot(
    location: str, version: int, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """The rows at `version`, each as an INSERT written by the commit that last wrote it."""
    rows = (
        f"SELECT {_literal(ChangeType.INSERT)} AS {CHANGE_TYPE}, {_select(columns)}, "
        f"_metadata.row_commit_version AS {_VERSION} "
        f"FROM {delta_ref(location)} VERSION AS OF {int(version)}"
    )
    return _stamped(rows, version, columns, commits)


def _nothing(location: str, version: int, columns: Sequence[str]) -> str:
    """No rows, in the stream's shape."""
    return (
        f"SELECT {_literal(ChangeType.INSERT)} AS {CHANGE_TYPE}, "
        f"CAST(NULL AS BIGINT) AS {COMMIT_VERSION}, CAST(NULL AS TIMESTAMP) AS {COMMIT_TIMESTAMP}, "
        f"{_select(columns)} FROM {delta_ref(location)} VERSION AS OF {int(version)} WHERE false"
    )


def _stamped(rows: str, end: int, columns: Sequence[str], commits: Sequence[Commit]) -> str:
    """`rows` with the time of the commit that wrote each image, from a small inline table of
    the source's commit times (broadcast by the join)."""
    times = ", ".join(
        f"({commit.version}, {_timestamp(commit.timestamp)})"
        for commit in commits
        if commit.version <= end
    )
    return (
        f"SELECT /*+ BROADCAST(t) */ r.{CHANGE_TYPE}, r.{_VERSION} AS {COMMIT_VERSION}, "
        f"t.{_TIME} AS {COMMIT_TIMESTAMP}, "
        + ", ".join(f"r.{quote_name(column)}" for column in columns)
        + f" FROM ({rows}) AS r LEFT JOIN (VALUES {times}) AS t({_VERSION}, {_TIME}) "
        f"ON r.{_VERSION} = t.{_VERSION}"
    )


def _timestamp(moment: datetime) -> str:
    return f"TIMESTAMP'{moment.isoformat(sep=' ', timespec='microseconds')}'"


def _select(columns: Sequence[str]) -> str:
    return ", ".join(quote_name(column) for column in columns)


def _literal(change_type: ChangeType) -> str:
    return sql_string(change_type.value)
