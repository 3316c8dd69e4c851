"""A stream's rows for one range of its source's versions, as one Spark SQL query: Delta's net
changes by row id (row tracking) for STANDARD, the change data feed's inserts for APPEND_ONLY.
Each row carries the version that wrote its image and that commit's time, so an UPDATE_BEFORE
or DELETE row shows the older commit. The query is plain text, so a statement inlines it and a
session API frame is built from it, on a local session and over Spark Connect alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lake_assets.core.delta import Commit, delta_ref, quote_name, sql_string
from lake_assets.streams.changelog import CHANGE_FOLDER, RangeFiles, backfill_origins
from lake_assets.streams.entry import ChangeType, StreamEntry, StreamMode

CHANGE_TYPE = "__change_type"
COMMIT_VERSION = "__commit_version"
COMMIT_TIMESTAMP = "__commit_timestamp"
METADATA_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)

# Delta's change types, as streams name them.
_CHANGE_TYPES = {
    "insert": ChangeType.INSERT,
    "update_preimage": ChangeType.UPDATE_BEFORE,
    "update_postimage": ChangeType.UPDATE_AFTER,
    "delete": ChangeType.DELETE,
}
_VERSION = "__lake_image_version"
_TIME = "__lake_image_time"
# The stamps' columns beside those: the row ids a backfill's stamp covers, and the writer.
_LOW, _HIGH, _WRITER = "__lake_low", "__lake_high", "__lake_writer"
# Working columns of the direct reader: the row id, the commit of a change, before (0) or
# after (1) it, the change's position in the row's history and that history's length.
_ROW, _COMMIT, _SIDE = "__lake_row", "__lake_commit", "__lake_side"
_FILE, _INDEX = "__lake_file", "__lake_index"
_FIRST, _LAST, _AT, _COUNT = "__lake_first", "__lake_last", "__lake_at", "__lake_count"
# Bytes of change files one task reads (Spark's spark.sql.files.maxPartitionBytes default).
_ONE_TASK = 128 * 1024 * 1024


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
    entry: StreamEntry,
    read: StreamRead,
    columns: Sequence[str],
    commits: Sequence[Commit],
    files: RangeFiles | None = None,
) -> str:
    """The stream's rows: `__change_type`, `__commit_version`, `__commit_timestamp`, then the
    source's `columns`; `commits` are the source's, for the times of old row images, and
    `files` what the range wrote, when its log was read."""
    location = entry.source_location
    if entry.mode is StreamMode.APPEND_ONLY:
        inserted = _inserted(location, read, columns, commits)
        if not read.initial:
            return inserted
        return f"{_snapshot(location, read.start, columns, commits)} UNION ALL {inserted}"
    if read.initial:
        return _snapshot(location, read.end, columns, commits)
    if read.start >= read.end or (files is not None and files.direct and not files.needed()):
        return _nothing(location, read.end, columns)
    if files is not None and files.direct:
        direct = _direct_net_changes(location, files, columns)
        return _stamped(location, direct, read.end, columns, commits)
    return _net_changes(location, read, columns, commits)


def _net_changes(
    location: str, read: StreamRead, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """The net change per row id; UPDATE_BEFORE and DELETE rows show the image at the offset."""
    cases = " ".join(
        f"WHEN {sql_string(delta)} THEN {sql_string(ours.value)}"
        for delta, ours in _CHANGE_TYPES.items()
    )
    changes = (
        f"SELECT CASE _change_type {cases} END AS {CHANGE_TYPE}, {_select(columns)}, "
        f"_metadata.row_commit_version AS {_VERSION}, _metadata.row_id AS {_ROW} "
        f"FROM {delta_ref(location)} CHANGES FROM VERSION {int(read.start)} EXCLUSIVE "
        f"TO VERSION {int(read.end)} "
        "WITH ('deduplicationMode' = 'netChanges', 'computeUpdates' = 'true')"
    )
    return _stamped(location, changes, read.end, columns, commits)


def _direct_net_changes(location: str, files: RangeFiles, columns: Sequence[str]) -> str:
    """Delta's net changes, from the range's change files and new files only: per row id, its
    first change shows whether it existed at the offset (and its image then), its last whether
    it exists at the end (and its image now)."""
    parts = [_change_files(location, files, columns), _new_files(location, files, columns)]
    # Changes that one task reads anyway are netted where they are read, without a shuffle.
    single = "/*+ COALESCE(1) */" if files.size <= _ONE_TASK else ""
    ordered = f"PARTITION BY {_ROW} ORDER BY {_COMMIT}, {_SIDE}"
    whole = f"{ordered} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
    history = (
        f"SELECT *, row_number() OVER ({ordered}) AS {_AT}, "
        f"count(1) OVER (PARTITION BY {_ROW}) AS {_COUNT}, "
        f"first({_SIDE}) OVER ({whole}) AS {_FIRST}, last({_SIDE}) OVER ({whole}) AS {_LAST} "
        f"FROM (SELECT {single} * FROM ({' UNION ALL '.join(part for part in parts if part)}))"
    )
    before, after = _literal(ChangeType.UPDATE_BEFORE), _literal(ChangeType.UPDATE_AFTER)
    return (
        f"SELECT CASE WHEN {_FIRST} = 0 AND {_LAST} = 1 THEN IF({_AT} = 1, {before}, {after}) "
        f"WHEN {_FIRST} = 0 THEN {_literal(ChangeType.DELETE)} "
        f"ELSE {_literal(ChangeType.INSERT)} END AS {CHANGE_TYPE}, {_select(columns)}, {_VERSION}, "
        f"{_ROW} "
        f"FROM ({history}) WHERE ({_AT} = 1 AND {_FIRST} = 0) "
        f"OR ({_AT} = {_COUNT} AND {_LAST} = 1)"
    )


def _change_files(location: str, files: RangeFiles, columns: Sequence[str]) -> str:
    """The change files' rows: a postimage's version is its commit's, others carry theirs. A
    MERGE's new rows have no row id there; each gets a negative one of its own (range_files
    reads Delta's way any range that changes such a row again)."""
    if not files.changes:
        return ""
    row_id, row_version = (quote_name(name) for name in files.row_columns)
    versions = ", ".join(
        f"({sql_string(_name(path))}, {version}, {number})"
        for number, (path, version) in enumerate(files.changes)
    )
    glob = _glob(location, CHANGE_FOLDER, [path for path, _ in files.changes])
    return (
        f"SELECT /*+ BROADCAST(f) */ {_select(columns, 'c')}, "
        f"coalesce(c.{row_id}, -1 - f.o * 4294967296 - c.{_INDEX}) AS {_ROW}, "
        f"f.v AS {_COMMIT}, coalesce(c.{row_version}, f.v) AS {_VERSION}, "
        f"IF(c._change_type IN ('delete', 'update_preimage'), 0, 1) AS {_SIDE} "
        f"FROM (SELECT *, _metadata.file_name AS {_FILE}, _metadata.row_index AS {_INDEX} "
        f"FROM parquet.{glob}) AS c JOIN (VALUES {versions}) AS f(n, v, o) ON c.{_FILE} = f.n"
    )


def _new_files(location: str, files: RangeFiles, columns: Sequence[str]) -> str:
    """Insert-only commits' rows: row id = the file's base row id + the row's index."""
    if not files.inserted:
        return ""
    bases = ", ".join(f"({sql_string(_name(p))}, {base}, {v})" for p, base, v in files.inserted)
    glob = _glob(location, "", [path for path, _, _ in files.inserted])
    return (
        f"SELECT /*+ BROADCAST(f) */ {_select(columns, 'i')}, f.b + i.{_INDEX} AS {_ROW}, "
        f"f.v AS {_COMMIT}, f.v AS {_VERSION}, 1 AS {_SIDE} "
        f"FROM (SELECT *, _metadata.file_name AS {_FILE}, _metadata.row_index AS {_INDEX} "
        f"FROM parquet.{glob}) AS i JOIN (VALUES {bases}) AS f(n, b, v) ON i.{_FILE} = f.n"
    )


def _glob(location: str, folder: str, paths: Sequence[str]) -> str:
    """One quoted path that matches exactly `paths` (file names in `folder`)."""
    names = sorted({_name(path) for path in paths})
    pattern = names[0] if len(names) == 1 else "{" + ",".join(names) + "}"
    return quote_name("/".join(part for part in (location.rstrip("/"), folder, pattern) if part))


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _inserted(
    location: str, read: StreamRead, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """The rows inserted after the offset, with the values they were inserted with."""
    if read.start >= read.end:
        return _nothing(location, read.end, columns)
    rows = (
        f"SELECT {_literal(ChangeType.INSERT)} AS {CHANGE_TYPE}, {_select(columns)}, "
        f"_commit_version AS {_VERSION}, CAST(NULL AS BIGINT) AS {_ROW} "
        f"FROM table_changes_by_path({sql_string(location)}, {int(read.start) + 1}, "
        f"{int(read.end)}) WHERE _change_type = 'insert'"
    )
    return _stamped(location, rows, read.end, columns, commits)


def _snapshot(
    location: str, version: int, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """The rows at `version`, each as an INSERT written by the commit that last wrote it."""
    rows = (
        f"SELECT {_literal(ChangeType.INSERT)} AS {CHANGE_TYPE}, {_select(columns)}, "
        f"_metadata.row_commit_version AS {_VERSION}, _metadata.row_id AS {_ROW} "
        f"FROM {delta_ref(location)} VERSION AS OF {int(version)}"
    )
    return _stamped(location, rows, version, columns, commits)


def _nothing(location: str, version: int, columns: Sequence[str]) -> str:
    """No rows, in the stream's shape."""
    return (
        f"SELECT {_literal(ChangeType.INSERT)} AS {CHANGE_TYPE}, "
        f"CAST(NULL AS BIGINT) AS {COMMIT_VERSION}, CAST(NULL AS TIMESTAMP) AS {COMMIT_TIMESTAMP}, "
        f"{_select(columns)} FROM {delta_ref(location)} VERSION AS OF {int(version)} WHERE false"
    )


def _stamped(
    location: str, rows: str, end: int, columns: Sequence[str], commits: Sequence[Commit]
) -> str:
    """`rows` (with their row ids) stamped with the commit that wrote each image and its time,
    from a small inline table of the source's commits (broadcast by the join). Rows that a row
    tracking backfill gave its own version get, by row id, the version that added their file."""
    times = {commit.version: _timestamp(commit.timestamp) for commit in commits}
    origins = [o for o in backfill_origins(location, commits) if o.backfill <= end]
    backfilled = {origin.backfill for origin in origins}
    stamps = [
        f"({version}, NULL, NULL, {version}, {time})"
        for version, time in times.items()
        if version <= end and version not in backfilled
    ] + [
        f"({o.backfill}, {o.first}, {o.last}, {o.version}, {times.get(o.version, 'NULL')})"
        for o in origins
    ]
    return (
        f"SELECT /*+ BROADCAST(t) */ r.{CHANGE_TYPE}, "
        f"coalesce(t.{_WRITER}, r.{_VERSION}) AS {COMMIT_VERSION}, "
        f"t.{_TIME} AS {COMMIT_TIMESTAMP}, "
        + ", ".join(f"r.{quote_name(column)}" for column in columns)
        + f" FROM ({rows}) AS r LEFT JOIN (VALUES {', '.join(stamps)}) "
        f"AS t({_VERSION}, {_LOW}, {_HIGH}, {_WRITER}, {_TIME}) "
        f"ON r.{_VERSION} = t.{_VERSION} "
        f"AND (t.{_LOW} IS NULL OR r.{_ROW} BETWEEN t.{_LOW} AND t.{_HIGH})"
    )


def _timestamp(moment: datetime) -> str:
    return f"TIMESTAMP'{moment.isoformat(sep=' ', timespec='microseconds')}'"


def _select(columns: Sequence[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + quote_name(column) for column in columns)


def _literal(change_type: ChangeType) -> str:
    return sql_string(change_type.value)
