"""COPY INTO a table from a volume, exactly once.

A batch's rows and its load records go into ONE Delta commit: the records ride in the commit's
userMetadata. The SQLite load-history index is rebuilt from those commits (`reconcile`) before
every load, so a crash between the commit and the index update loses nothing and loads nothing
twice. Concurrent loaders are fenced by Delta's idempotent writes (txnAppId/txnVersion)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

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
from lake_assets.pipes.copy_options import SKIP_FILE, ColumnMatch, ErrorMode, OnError
from lake_assets.pipes.diagnose import unreadable
from lake_assets.pipes.evolution import Evolution, plan_evolution
from lake_assets.pipes.file_formats import formats_of
from lake_assets.pipes.headers import Layouts, csv_headers, read_layouts
from lake_assets.pipes.load_records import (
    LOAD_MARKER,
    LoadRecord,
    LoadStatus,
    RejectedRow,
    file_record,
    load_mark,
    record_loads,
)
from lake_assets.pipes.parsing import (
    Rejected,
    as_table_rows,
    is_malformed,
    parse_files,
    rows_per_file,
    sorting_out,
)
from lake_assets.pipes.planning import CHANGED_SINCE_LOADED
from lake_assets.tables.columns import record_schema, schema_record
from lake_assets.tables.enforcing import judged
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import FileInfo, VolumeStore

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
AFTER_COMMIT = "load-after-commit"
BEFORE_COMMIT = "load-before-commit"


@dataclass
class LoadOutcome:
    table: str
    version: int | None
    records: list[LoadRecord]
    purged: list[str]

    @property
    def rows(self) -> int:
        return sum(record.rows_loaded for record in self.records if record.status.loaded)

    @property
    def rejected(self) -> int:
        return sum(record.rows_rejected for record in self.records)

    def count(self, status: str) -> int:
        return sum(1 for record in self.records if record.status == status)

    def summary(self) -> str:
        at = f"; {self.table} is at version {self.version}" if self.version is not None else ""
        skipped = self.count(LoadStatus.SKIPPED_CHANGED)
        changed = f", {skipped} skipped: {CHANGED_SINCE_LOADED}" if skipped else ""
        loaded = self.count(LoadStatus.LOADED) + self.count(LoadStatus.PARTIALLY_LOADED)
        rejected = f", {self.rejected} rejected" if self.rejected else ""
        return (
            f"COPY: {loaded} files loaded ({self.rows} rows{rejected}), "
            f"{self.count(LoadStatus.LOAD_FAILED)} failed, {len(self.purged)} purged{changed}{at}"
        )


def reconcile(spark: SparkSession, catalog: Catalog, table: TableEntry) -> int:
    """Copy the load records carried by commits newer than the index's mark into the index;
    return the table's newest version: the next load acts on the index as of it, and its commit
    is fenced by the load records up to it (see _Batch.commit)."""
    ensure_log_intact(table)
    mark = load_mark(catalog, table.name)
    commits = commits_since(spark, table.location, mark)
    newest = commits[0].version
    if newest <= mark:
        return newest
    records, rejected = [], []
    for commit in commits:
        metadata = decode(commit.user_metadata, LOAD_MARKER)
        if metadata is None:
            continue
        pipe = metadata.get("pipe")
        for path, size, modified, rows, *bad in metadata["files"]:
            count, time, version = (bad[0] if bad else 0), metadata["time"], commit.version
            records.append(_record_of(path, size, modified, time, rows, count, pipe, version))
        rejected += [
            RejectedRow(path, number, column, error, raw, pipe, commit.version)
            for path, number, column, error, raw in metadata.get("rejected", [])
        ]
    record_loads(catalog, table.name, records, newest, rejected)
    if table.version is None or table.version < newest:
        # A crash after a load's commit also skipped recording the table's version and rows.
        catalog.record_table_state(table, newest, row_count(spark, table.location, newest))
    return newest


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
    on_error: OnError = SKIP_FILE,
    match: ColumnMatch = ColumnMatch.NONE,
) -> LoadOutcome:
    """Load `files` (already filtered to pending ones) into `table` in one commit; `fence` is
    the table's newest version when `reconcile` brought the index up to date.

    One pass when every file reads and every record fits (the usual case); otherwise the batch
    is sorted out (`sorting_out`) by `on_error`: bad files fail alone, or lose only their bad
    records, and the rest still loads. Format options Spark's strict reader cannot take
    (skip_header, NULL_IF) read leniently at once."""
    if not files:
        return LoadOutcome(table.name, None, [], [])
    local = {store.spark_path(info.relative_path): info for info in files}
    columns = target_columns(table, source)
    headers = csv_headers(spark, source, store, list(local), match)
    evolution = plan_evolution(spark, table, source, store, list(local), columns, headers)
    source, columns = evolution.source(source), evolution.read_columns(columns)
    now = now_utc()
    batch = _Batch(table, columns, now, pipe, fence, evolution)
    layouts = read_layouts(spark, source, store, columns, list(local), match, headers)
    error: Exception | None = None
    try:
        if not formats_of(source).reads_leniently:
            return _load_strictly(spark, catalog, batch, source, store, local, layouts)
    except Exception as failure:  # a bad file aborts the write before its commit
        if not is_malformed(failure) and unreadable(failure) is None:
            raise
        error = failure
    with sorting_out(spark, source, store, columns, list(local), error, on_error, layouts) as out:
        if out.problems and on_error.mode == ErrorMode.ABORT_STATEMENT:
            raise _aborted(table.name, local, out.problems) from None
        failed = [
            file_record(local.pop(path), now, LoadStatus.LOAD_FAILED, 0, problem, pipe, None)
            for path, problem in out.problems.items()
        ]
        good = {
            path: (info, out.counts.get(path, 0), out.rejected.get(path, (0, []))[0])
            for path, info in local.items()
        }
        rejected = {
            local[path].url: kept for path, (_, kept) in out.rejected.items() if path in local
        }
        version = None
        if good and out.rows is not None:
            version = batch.commit(spark, catalog, out.rows, good, rejected)
        return batch.recorded(catalog, good, rejected, failed, version)


def _load_strictly(
    spark: SparkSession,
    catalog: Catalog,
    batch: _Batch,
    source: VolumeSource,
    store: VolumeStore,
    local: dict[str, FileInfo],
    layouts: Layouts | None,
) -> LoadOutcome:
    """The one pass of a batch whose every file reads and every record fits."""
    columns = batch.columns
    rows = parse_files(spark, source, store, columns, list(local), strict=True, layouts=layouts)
    counts = rows_per_file(spark, source, store, columns, list(local))
    good = {path: (info, counts.get(path, 0), 0) for path, info in local.items()}
    version = batch.commit(spark, catalog, rows, good, {})
    return batch.recorded(catalog, good, {}, [], version)


def _aborted(table: str, local: dict[str, FileInfo], problems: dict[str, str]) -> LakeError:
    path, problem = next(iter(problems.items()))
    return LakeError(
        f"COPY INTO {table} stopped at {local[path].url}: {problem}; nothing was loaded "
        f"({len(problems)} of {len(local)} files have records that do not fit; "
        "ON_ERROR = ABORT_STATEMENT)",
        "fix or remove the file, or load the other files with ON_ERROR = SKIP_FILE (or every "
        "good record with ON_ERROR = CONTINUE)",
    )


# A file's path to load: its file, its records that load and its rejected records.
Good = dict[str, tuple[FileInfo, int, int]]


@dataclass(frozen=True)
class _Batch:
    """What every commit of one load shares: its table, columns, time, pipe and fence."""

    table: TableEntry
    columns: tuple[Column, ...]
    now: str
    pipe: str | None
    fence: int
    evolution: Evolution = field(default_factory=Evolution)

    def commit(
        self,
        spark: SparkSession,
        catalog: Catalog,
        rows: DataFrame,
        good: Good,
        rejected: dict[str, list[Rejected]],
    ) -> int:
        """Append the rows with their files' load records and rejected records in the same
        commit; return its version. Fenced by the load records up to the batch's fence, which
        `reconcile` put in the index: a load that committed after them, whatever else committed
        too, makes Delta drop this write."""
        table, evolution = self.table, self.evolution
        kept = [
            [url, r.row_number, r.column_name, r.error, r.raw_record]
            for url, rows in rejected.items()
            for r in rows
        ]
        record = new_record(
            LOAD_MARKER,
            pipe=self.pipe,
            time=self.now,
            files=[
                [i.url, i.size, i.last_modified.isoformat(), n, bad] for i, n, bad in good.values()
            ],
            **({"rejected": kept} if kept else {}),
            **({"schema": self._schema()} if evolution.added else {}),
        )
        before = catalog.get(TableEntry, table.name)
        app = f"lake-load-{table.name}"
        fence, _ = fence_at(spark, table.location, app, LOAD_MARKER, self.fence)
        written = evolution.written(self.columns)
        frame = as_table_rows(evolution.rows(rows), self._table_columns(), written)
        judged_rows = judged(table, frame, record["tag"], f"COPY INTO {table.name}")
        record.update(judged_rows.record())
        # New columns join the table in this commit (Delta's schema merge on append).
        merge = {"mergeSchema": "true"} if evolution.added else {}

        def write() -> None:
            failpoints.reached(BEFORE_COMMIT)
            options = {**writer_options(record, fence), **merge}
            judged_rows.rows.write.format("delta").mode("append").options(**options).save(
                table.location
            )
            failpoints.reached(AFTER_COMMIT)

        commit = fenced_write(spark, table.location, record, fence, write)
        if commit is None:
            raise LakeError(
                f"another load into {table.name} committed at the same moment; nothing was written",
                "run the load again: files already loaded are skipped",
            )
        inserted = sum(count for _, count, _ in good.values()) - judged_rows.dropped
        record_commit_state(spark, catalog, before, commit.version, (inserted, 0, 0))
        if evolution.added:
            record_schema(catalog, before, record["schema"], commit.version)
        return commit.version

    def _table_columns(self) -> tuple[Column, ...]:
        return self.evolution.table_columns(self.table.columns)

    def _schema(self) -> dict[str, Any]:
        """The schema record of a load that adds columns (see tables.columns)."""
        table = self.table
        columns = self._table_columns()
        return schema_record(
            columns, table.primary_key, table.cluster_by, self.evolution.describe()
        )

    def recorded(
        self,
        catalog: Catalog,
        good: Good,
        rejected: dict[str, list[Rejected]],
        failed: list[LoadRecord],
        version: int | None,
    ) -> LoadOutcome:
        """The load's records put in the index: right after the reconciled version, this
        commit's records complete it up to it."""
        loaded = [
            _record_of(info.url, info.size, info.last_modified.isoformat(), self.now, n, bad,
                       self.pipe, version)
            for info, n, bad in good.values()
        ]  # fmt: skip
        kept = [
            RejectedRow(url, r.row_number, r.column_name, r.error, r.raw_record, self.pipe, version)
            for url, rows in rejected.items()
            for r in rows
            if version is not None
        ]
        mark = version if version == self.fence + 1 else None
        record_loads(catalog, self.table.name, loaded + failed, mark, kept)
        return LoadOutcome(self.table.name, version, loaded + failed, [])


def _record_of(
    path: str, size: int | None, modified: str | None, time: str, rows: int, rejected: int,
    pipe: str | None, version: int | None,
) -> LoadRecord:  # fmt: skip
    """A loaded file's record (older commits carry no count of rejected records: none)."""
    status = LoadStatus.PARTIALLY_LOADED if rejected else LoadStatus.LOADED
    return LoadRecord(path, time, size, modified, status, rows, None, pipe, version, rejected)
