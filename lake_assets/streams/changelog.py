"""The files a range of a stream source's commits wrote, from the source's Delta log.

Delta 4.4's own net-change reader (`CHANGES … 'netChanges'`) rebuilds every change from the
whole files the range's commits added and removed, so a small UPDATE on a big table reads
every row of every file it touched. The change data feed already holds each change once: a
DML commit writes its changed rows to `_change_data` files with their row ids and the versions
that wrote their old images, and an insert-only commit's rows are its new files (row id = the
file's base row id + the row's index). A range whose commits all have one of these two shapes
is read from those files alone; any other range (files removed without change files, as an
overwrite does; schema or protocol changes, partitions, column mapping, deletion vectors, a log
elsewhere than a local disk) goes through Delta's reader, the tests' oracle for this one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from pyspark.sql import SparkSession

from lake_assets.core.delta import Commit, log_actions, missing_files, table_properties

# Characters a Hadoop glob or our SQL path quoting would read as syntax.
_GLOB = set("{}[]*?\\,`")
CHANGE_FOLDER = "_change_data"
# Delta's names for the hidden columns that hold row ids and row versions in rewritten files.
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
ROW_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
# The commit that gives a table's existing rows their ids when row tracking is turned on.
BACKFILL = "ROW TRACKING BACKFILL"


@dataclass(frozen=True)
class RangeFiles:
    """What the commits after `start` up to `end` wrote. `direct` says whether their changes
    can be read from `changes` (change files and their versions) and `inserted` (files of
    insert-only commits: path, base row id, version) alone, whose hidden row id and row
    version columns are `row_columns`; `touched` are the data files they added or removed,
    which Delta's reader opens otherwise; `size` is the bytes the direct reader reads."""

    changes: tuple[tuple[str, int], ...]
    inserted: tuple[tuple[str, int, int], ...]
    touched: tuple[str, ...]
    direct: bool
    row_columns: tuple[str, str] = ("", "")
    size: int = 0

    def needed(self) -> tuple[str, ...]:
        """The files, relative to the table, that reading the range opens."""
        if self.direct:
            return tuple(path for path, _ in self.changes) + tuple(p for p, _, _ in self.inserted)
        return self.touched


def range_files(spark: SparkSession, location: str, start: int, end: int) -> RangeFiles | None:
    """The range's files, or None when its log cannot be read here (not on a local disk, or a
    commit expired)."""
    changes: list[tuple[str, int]] = []
    inserted: list[tuple[str, int, int]] = []
    touched: list[str] = []
    size = 0
    direct, unnamed = not _GLOB & set(location), False
    for version in range(start + 1, end + 1):
        actions = log_actions(location, version)
        if actions is None:
            return None
        files = data_changes(actions)
        touched += [action["path"] for _, action in files]
        cdc = [action["path"] for kind, action in files if kind == "cdc"]
        changes += [(path, version) for path in cdc]
        shaped = _plain(actions, files) and (bool(cdc) or _insert_only(files, version))
        # A later change to a row inserted without a row id could not be told from another row.
        direct = direct and shaped and not (unnamed and cdc)
        if direct and not cdc:
            inserted += [(a["path"], a["baseRowId"], version) for _, a in files]
        size += sum(a.get("size", 0) for kind, a in files if kind == "cdc" or not cdc)
        unnamed = unnamed or (bool(cdc) and _may_insert(actions))
    found = RangeFiles(tuple(changes), tuple(inserted), tuple(touched), direct, size=size)
    return _with_row_columns(spark, location, end, found)


def _with_row_columns(
    spark: SparkSession, location: str, end: int, files: RangeFiles
) -> RangeFiles:
    """`files` with the names of the hidden row columns their change files hold (the range
    changes no property, so the table's at `end` are those of all its commits). A table whose
    columns are mapped (renamed or dropped once) names them otherwise in its files: Delta's
    reader reads it."""
    if not files.direct:
        return files
    properties = table_properties(spark, location, end)
    if properties.get("delta.columnMapping.mode", "none") != "none":
        return replace(files, inserted=(), direct=False)
    if not files.changes:
        return files
    row_id, row_version = properties.get(ROW_ID_COLUMN), properties.get(ROW_VERSION_COLUMN)
    if row_id is None or row_version is None:
        return replace(files, inserted=(), direct=False)
    return replace(files, row_columns=(row_id, row_version))


def _may_insert(actions: list[dict[str, Any]]) -> bool:
    """Whether a commit's change files may hold new rows, which Delta writes there without
    their row ids (a MERGE's inserts); UPDATE and DELETE only change rows that have ids."""
    info: dict[str, Any] = next(
        (action["commitInfo"] for action in actions if "commitInfo" in action), {}
    )
    metrics = info.get("operationMetrics") or {}
    if info.get("operation") in ("UPDATE", "DELETE"):
        return False
    return metrics.get("numTargetRowsInserted", "1") != "0"


def data_changes(actions: Iterable[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The commit's file actions that change data: (kind, action) for add, remove and cdc."""
    return [
        (kind, action[kind])
        for action in actions
        for kind in ("add", "remove", "cdc")
        if kind in action and (kind == "cdc" or action[kind].get("dataChange", True))
    ]


def _plain(actions: list[dict[str, Any]], files: list[tuple[str, dict[str, Any]]]) -> bool:
    """No schema or protocol change, partition, deletion vector or unusual file name."""
    if any("metaData" in action or "protocol" in action for action in actions):
        return False
    return not any(
        action.get("partitionValues")
        or action.get("deletionVector")
        or (_GLOB | {"/", "%"}) & set(action["path"].removeprefix(f"{CHANGE_FOLDER}/"))
        for _, action in files
    )


def _insert_only(files: list[tuple[str, dict[str, Any]]], version: int) -> bool:
    """Only new files of new rows: their row ids and versions come from the add actions."""
    return all(
        kind == "add"
        and action.get("baseRowId") is not None
        and action.get("defaultRowCommitVersion") == version
        for kind, action in files
    )


def missing(location: str, files: RangeFiles) -> list[str]:
    """The range's needed files that are gone from the table (removed by VACUUM)."""
    return missing_files(location, files.needed())


@dataclass(frozen=True)
class Origin:
    """Rows `first` to `last` by row id, which a row tracking backfill at `backfill` gave their
    ids (and, as their row commit version, its own), were written by `version`."""

    backfill: int
    first: int
    last: int
    version: int


def backfill_origins(location: str, commits: Sequence[Commit]) -> tuple[Origin, ...]:
    """Where the rows of each backfilled file came from, for every backfill in `commits`: the
    commit that added the file, from a local log (none for logs elsewhere or expired)."""
    backfills = (commit.version for commit in commits if commit.operation == BACKFILL)
    return tuple(origin for version in backfills for origin in _origins(location, version))


@cache
def _origins(location: str, backfill: int) -> tuple[Origin, ...]:
    """The backfill's files in row id order, each until the next one's base row id."""
    actions = log_actions(location, backfill) or []
    bases = sorted((a["add"]["baseRowId"], a["add"]["path"]) for a in actions if "add" in a)
    added: dict[str, int] = {}
    for version in range(backfill - 1, -1, -1) if bases else ():
        for kind, action in data_changes(log_actions(location, version) or []):
            if kind == "add":
                added[action["path"]] = version
    ends = [base - 1 for base, _ in bases[1:]] + [2**63 - 1]
    return tuple(
        Origin(backfill, base, end, added.get(path, backfill))
        for (base, path), end in zip(bases, ends, strict=True)
    )
