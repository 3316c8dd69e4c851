"""COPY INTO a table from a volume, exactly once.

A batch's rows and its load records go into ONE Delta commit: the records ride in the commit's
userMetadata. The SQLite load-history index is rebuilt from those commits (`reconcile`) before
every load, so a crash between the commit and the index update loses nothing and loads nothing
twice. Concurrent loaders are fenced by Delta's idempotent writes (txnAppId/txnVersion)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import (
    commits_since,
    decode,
    fence_at,
    fenced_write,
    new_record,
    writer_options,
)
from lake_assets.core.delta import row_count
from lake_assets.core.entries import Column, now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.writes import record_commit_state
from lake_assets.pipes.diagnose import unreadable
from lake_assets.pipes.load_records import (
    LOAD_MARKER,
    LoadRecord,
    LoadStatus,
    load_history,
    load_mark,
    record_loads,
)
from lake_assets.pipes.parsing import as_read, is_malformed, parse_files, rows_per_file, sorting_out
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import FileInfo, VolumeStore

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
AFTER_COMMIT = "load-after-commit"
BEFORE_COMMIT = "load-before-commit"

# Files modified this recently may still be being written; they wait for the next look.
SETTLE_SECONDS = 1.0

# What COPY, a pipe's run and DESC PIPE say of loaded files that changed and were skipped.
CHANGED_SINCE_LOADED = "changed since loaded (RELOAD_CHANGED = TRUE loads them again)"


@dataclass
class LoadOutcome:
    table: str
    version: int | None
    records: list[LoadRecord]
    purged: list[str]

    @property
    def rows(self) -> int:
        return sum(
            record.rows_loaded for record in self.records if record.status == LoadStatus.LOADED
        )

    def count(self, status: str) -> int:
        return sum(1 for record in self.records if record.status == status)

    def summary(self) -> str:
        at = f"; {self.table} is at version {self.version}" if self.version is not None else ""
        skipped = self.count(LoadStatus.SKIPPED_CHANGED)
        changed = f", {skipped} skipped: {CHANGED_SINCE_LOADED}" if skipped else ""
        return (
            f"COPY: {self.count(LoadStatus.LOADED)} files loaded ({self.rows} rows), "
            f"{self.count(LoadStatus.LOAD_FAILED)} failed, {len(self.purged)} purged{changed}{at}"
        )


def reconcile(spark: SparkSession, catalog: Catalog, table: TableEntry) -> int:
    """Copy the load records carried by commits newer than the index's mark into the index;
    return the table's newest version: the next load acts on the index as of it, and its commit
    is fenced by the load records up to it (see _commit)."""
    ensure_log_intact(table)
    mark = load_mark(catalog, table.name)
    commits = commits_since(spark, table.location, mark)
    newest = commits[0].version
    if newest <= mark:
        return newest
    records = []
    for commit in commits:
        metadata = decode(commit.user_metadata, LOAD_MARKER)
        if metadata is None:
            continue
        for path, size, modified, rows in metadata["files"]:
            records.append(
                LoadRecord(
                    path, metadata["time"], size, modified, LoadStatus.LOADED, rows, None,
                    metadata.get("pipe"), commit.version,
                )
            )  # fmt: skip
    record_loads(catalog, table.name, records, newest)
    if table.version is None or table.version < newest:
        # A crash after a load's commit also skipped recording the table's version and rows.
        catalog.record_table_state(table, newest, row_count(spark, table.location, newest))
    return newest


@dataclass(frozen=True)
class ChangedFile:
    """A loaded file whose size or modification time changed since its newest load."""

    info: FileInfo
    last_load: LoadRecord
    recorded: bool  # this change already has its SKIPPED_CHANGED record


@dataclass(frozen=True)
class LoadPlan:
    """What a load does with the files it sees: loads `pending`, and skips `changed` (loaded
    files that changed since, unless RELOAD_CHANGED or FORCE), recording each change once."""

    pending: list[FileInfo]
    changed: list[ChangedFile]

    @property
    def news(self) -> list[FileInfo]:
        """What a run has to act on: files to load and changes not recorded yet (a sensor asks
        for a run for these only, so a skipped change is recorded once, not at every look)."""
        return self.pending + [c.info for c in self.changed if not c.recorded]


def plan_files(
    catalog: Catalog,
    table: str,
    files: list[FileInfo],
    retention_days: float,
    *,
    force: bool = False,
    reload_changed: bool = False,
    complete: bool = False,
) -> LoadPlan:
    """Pending: files not loaded within the retention window, not failed as they are, and
    settled (or known `complete`: S3 announces an object only once it is whole). A loaded file
    whose size or modification time changed since its newest load is pending only with
    `reload_changed`; else it is a skipped change."""
    now = datetime.now(UTC)
    since = (now - timedelta(days=retention_days)).isoformat(timespec="milliseconds")
    records = load_history(catalog, table, since)
    newest_loads: dict[str, LoadRecord] = {}
    for record in records:  # newest first
        if record.status == LoadStatus.LOADED:
            newest_loads.setdefault(record.file_path, record)
    failed, skipped = (
        {(r.file_path, r.file_size, r.file_modified) for r in records if r.status == status}
        for status in (LoadStatus.LOAD_FAILED, LoadStatus.SKIPPED_CHANGED)
    )
    settled = now - timedelta(seconds=0 if complete else SETTLE_SECONDS)
    plan = LoadPlan([], [])
    for info in files:
        if info.last_modified > settled:
            continue
        if force:
            plan.pending.append(info)
            continue
        state = (info.url, info.size, info.last_modified.isoformat())
        last = newest_loads.get(info.url)
        loaded_as_is = last is not None and (last.file_size, last.file_modified) == state[1:]
        if loaded_as_is or state in failed:
            continue
        if last is None or reload_changed:
            plan.pending.append(info)
        else:
            plan.changed.append(ChangedFile(info, last, state in skipped))
    return plan


def skip_changed(
    catalog: Catalog, table: str, changed: list[ChangedFile], pipe: str | None
) -> list[LoadRecord]:
    """A SKIPPED_CHANGED record for each skipped change; only the unrecorded ones are added to
    the load history (no rows, no commit: as a failed file's record)."""
    now = now_utc()
    skips = [
        (c, _record(c.info, now, LoadStatus.SKIPPED_CHANGED, 0, changed_text(c), pipe, None))
        for c in changed
    ]
    record_loads(catalog, table, [record for c, record in skips if not c.recorded], None)
    return [record for _, record in skips]


def changed_text(changed: ChangedFile) -> str:
    """Why a loaded file was skipped, and the two ways to load it."""
    last = changed.last_load
    return (
        f"changed since it was loaded at {last.last_copy_time} ({last.file_size} bytes then, "
        f"{changed.info.size} now), so not loaded again; COPY with RELOAD_CHANGED = TRUE "
        "appends its new content, FORCE = TRUE appends every file again"
    )


def loaded_files(
    catalog: Catalog, table: str, files: list[FileInfo], retention_days: float
) -> list[FileInfo]:
    """Files whose rows are committed, unchanged since: the only ones PURGE may delete."""
    since = (datetime.now(UTC) - timedelta(days=retention_days)).isoformat(timespec="milliseconds")
    loaded = {
        (r.file_path, r.file_size, r.file_modified)
        for r in load_history(catalog, table, since)
        if r.status == LoadStatus.LOADED
    }
    return [i for i in files if (i.url, i.size, i.last_modified.isoformat()) in loaded]


def target_columns(table: TableEntry, source: VolumeSource) -> tuple[Column, ...]:
    """The columns read from the files: the table's, or the COPY's own list mapped onto them."""
    if not source.columns:
        return table.columns
    names = {column.name.lower() for column in source.columns}
    missing = [c.name for c in table.columns if c.name.lower() not in names]
    if missing:
        raise LakeError(
            f"column {missing[0]} of table {table.name} is not in the COPY's column list",
            "list every table column in FROM VOLUME v (col TYPE, …)",
        )
    return source.columns


def load(
    spark: SparkSession,
    catalog: Catalog,
    table: TableEntry,
    source: VolumeSource,
    store: VolumeStore,
    files: list[FileInfo],
    *,
    fence: int,
    pipe: str | None = None,
) -> LoadOutcome:
    """Load `files` (already filtered to pending ones) into `table` in one commit; `fence` is
    the table's newest version when `reconcile` brought the index up to date.

    One pass when every file reads and every record fits (the usual case); otherwise the bad
    files are sorted out (`sorting_out`) and fail alone, and the good ones still load."""
    if not files:
        return LoadOutcome(table.name, None, [], [])
    columns = target_columns(table, source)
    local = {store.spark_path(info.relative_path): info for info in files}
    now = now_utc()
    failed: list[LoadRecord] = []
    version = None
    good: list[tuple[FileInfo, int]] = []
    try:
        good = _good(local, rows_per_file(spark, source, store, columns, list(local)))
        rows = parse_files(spark, source, store, columns, list(local), strict=True)
        version = _commit(spark, catalog, table, rows, columns, good, now, pipe, fence)
    except Exception as error:  # a bad file aborts the write before its commit
        if not is_malformed(error) and unreadable(error) is None:
            raise
        with sorting_out(spark, source, store, columns, list(local), error) as sorted_out:
            good_rows, counts, problems = sorted_out
            for path, problem in problems.items():
                info = local.pop(path)
                failed.append(_record(info, now, LoadStatus.LOAD_FAILED, 0, problem, pipe, None))
            good = _good(local, counts)
            if good and good_rows is not None:
                version = _commit(spark, catalog, table, good_rows, columns, good, now, pipe, fence)
    loaded = [_record(info, now, LoadStatus.LOADED, n, None, pipe, version) for info, n in good]
    # Right after the reconciled version, this commit's records complete the index up to it.
    mark = version if version == fence + 1 else None
    record_loads(catalog, table.name, loaded + failed, mark)
    return LoadOutcome(table.name, version, loaded + failed, [])


def _good(local: dict[str, FileInfo], counts: dict[str, int]) -> list[tuple[FileInfo, int]]:
    return [(info, counts.get(path, 0)) for path, info in local.items()]


def _as_table_rows(frame: DataFrame, table: TableEntry, columns: tuple[Column, ...]) -> DataFrame:
    """The table's columns in its order and types, from the columns the files were read with."""
    read = {c.name.lower(): c.name for c in columns}
    return frame.select(
        *[
            F.col(f"`{read[c.name.lower()]}`").cast(t.type).alias(t.name)
            for c, t in zip(table.columns, as_read(table.columns), strict=True)
        ]
    )


def _record(
    info: FileInfo, now: str, status: LoadStatus, rows: int, error: str | None, pipe: str | None,
    version: int | None,
) -> LoadRecord:  # fmt: skip
    return LoadRecord(
        info.url, now, info.size, info.last_modified.isoformat(), status, rows, error, pipe, version
    )


def _commit(
    spark: SparkSession,
    catalog: Catalog,
    table: TableEntry,
    rows: DataFrame,
    columns: tuple[Column, ...],
    good: list[tuple[FileInfo, int]],
    now: str,
    pipe: str | None,
    version: int,
) -> int:
    """Append the rows with their files' load records in the same commit; return its version.
    Fenced by the load records up to `version`, which `reconcile` put in the index: a load that
    committed after them, whatever else committed too, makes Delta drop this write."""
    record = new_record(
        LOAD_MARKER,
        pipe=pipe,
        time=now,
        files=[[i.url, i.size, i.last_modified.isoformat(), n] for i, n in good],
    )
    before = catalog.get(TableEntry, table.name)
    fence, _ = fence_at(spark, table.location, f"lake-load-{table.name}", LOAD_MARKER, version)
    frame = _as_table_rows(rows, table, columns)

    def write() -> None:
        failpoints.reached(BEFORE_COMMIT)
        options = writer_options(record, fence)
        frame.write.format("delta").mode("append").options(**options).save(table.location)
        failpoints.reached(AFTER_COMMIT)

    commit = fenced_write(spark, table.location, record, fence, write)
    if commit is None:
        raise LakeError(
            f"another load into {table.name} committed at the same moment; nothing was written",
            "run the load again: files already loaded are skipped",
        )
    inserted = sum(count for _, count in good)
    record_commit_state(spark, catalog, before, commit.version, (inserted, 0, 0))
    return commit.version
