"""Dynamic tables: CREATE, DROP, SHOW, DESC, SUSPEND/RESUME, and the refresh engine.

A refresh is one Delta commit whose userMetadata carries the source versions it consumed, so the
next refresh starts exactly where the last committed one stopped; the SQLite refresh history is
an index rebuilt from those commits whenever it lags (a crash between the commit and the index
update loses no record and applies no change twice)."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from sqlglot import exp

from lake_assets.engine import failpoints, pruning, tables
from lake_assets.engine.delta import (
    COMMIT_TAG_CONF,
    MATERIALIZE_SOURCE_CONF,
    Commit,
    delta_ref,
    history,
    quote_name,
    row_changes,
    row_count,
    session_conf,
    sql_string,
)
from lake_assets.engine.dynamic_plan import AGGREGATE, Plan, classify, rewrite, with_hidden
from lake_assets.engine.incremental import (
    SourceRead,
    aggregate_merge,
    full_result,
    gained_rows,
    projection_merge,
    register_sources,
    table_at,
)
from lake_assets.engine.incremental import row_changes as result_changes
from lake_assets.engine.results import Result
from lake_assets.engine.spark_errors import translate_spark_error
from lake_assets.sql.binding import referenced_tables
from lake_assets.sql.parser import parse_statement
from lake_assets.sql.statements import (
    AlterDynamicTable,
    AlterTableProperties,
    CreateDynamicTable,
    DescribeDynamicTable,
    DropDynamicTable,
    Query,
    ShowRefreshHistory,
)
from resources.catalog import (
    Catalog,
    Column,
    DynamicTableEntry,
    RefreshRecord,
    TableEntry,
    now_utc,
)
from resources.errors import LakeError

CREATION, MANUAL, SCHEDULED, UPSTREAM = "CREATION", "MANUAL", "SCHEDULED", "UPSTREAM"
SUCCEED, FAILED, SKIPPED = "SUCCEED", "FAILED", "SKIPPED"
INCREMENTAL, FULL, NO_DATA = "INCREMENTAL", "FULL", "NO_DATA"
TRIGGERS = (CREATION, MANUAL, SCHEDULED, UPSTREAM)
# Delta's error conditions when a change data feed cannot be read for the versions asked for.
_FEED_GONE = ("DELTA_MISSING_CHANGE_DATA", "DELTA_CHANGE_TABLE_FEED_DISABLED", "DELTA_CHANGE_DATA")
_TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
# Delta refuses these characters in column names (without column mapping).
_BAD_COLUMN_NAME = re.compile(r"[ ,;{}()\n\t=]")
_HISTORY_WINDOW = 20


@dataclass(frozen=True)
class RefreshOutcome:
    """What one refresh did; `source_versions` are the versions it read (name → version)."""

    name: str
    state: str
    mode: str | None
    trigger: str
    reason: str | None = None
    rows_inserted: int = 0
    rows_deleted: int = 0
    source_versions: dict[str, int] = field(default_factory=dict)
    duration: float = 0.0
    version: int | None = None
    error: str | None = None

    def summary(self) -> str:
        if self.state != SUCCEED:
            return f"{self.state}: {self.error or self.reason}"
        why = f" ({self.reason})" if self.reason else ""
        at = f"; {self.name} is at version {self.version}" if self.version is not None else ""
        return (
            f"REFRESH {self.mode}{why}: {self.rows_inserted} rows inserted, "
            f"{self.rows_deleted} deleted in {self.duration:.2f} s{at}"
        )


def sources_of(entry: DynamicTableEntry) -> tuple[str, ...]:
    """The tables and dynamic tables a dynamic table reads (its upstream assets)."""
    return entry.sources


def _query(entry: DynamicTableEntry) -> exp.Expression:
    statement = parse_statement(entry.query)
    assert isinstance(statement, Query)
    return statement.expression


def plan_of(entry: DynamicTableEntry) -> Plan:
    return classify(_query(entry))


# CREATE / DROP / ALTER


def create_dynamic_table(
    spark: SparkSession, catalog: Catalog, warehouse: Path, stmt: CreateDynamicTable
) -> Result:
    existing = catalog.find_dynamic_table(stmt.name)
    if existing is not None and stmt.if_not_exists:
        return Result.status(f"dynamic table {stmt.name} already exists; nothing to do")
    if existing is not None and not stmt.or_replace:
        raise LakeError(
            f"dynamic table {stmt.name} already exists",
            "use CREATE OR REPLACE DYNAMIC TABLE, pick another name, or DROP it first",
        )
    if catalog.find_table(stmt.name) is not None:
        raise LakeError(
            f"table {stmt.name} already exists", "pick another name for the dynamic table"
        )
    if stmt.query.sources:
        raise LakeError(
            f"dynamic table {stmt.name} can read only tables and dynamic tables",
            "load the files into a table (COPY INTO or a pipe) and read that table",
        )
    sources = tuple(referenced_tables(stmt.query.expression))
    if not sources:
        raise LakeError(
            f"dynamic table {stmt.name} reads no table", "select FROM a table or dynamic table"
        )
    relations = {name: catalog.relation(name) for name in sources}
    _refuse_cycle(catalog, stmt.name, sources)
    plan = classify(stmt.query.expression)
    reads = [
        _source_read(spark, name, relation, None, index)
        for index, (name, relation) in enumerate(relations.items())
    ]
    register_sources(spark, reads, changes=False)
    by_name = {read.name: read for read in reads}
    rewritten = rewrite(
        with_hidden(plan, stmt.query.expression), lambda _, name: by_name[name].view("new")
    )
    schema = spark.sql(rewritten).schema
    visible = schema.fields[: len(schema.fields) - len(plan.hidden)]
    names = _column_names(stmt, [f.name for f in visible])
    comments = {c.name.lower(): c.comment for c in stmt.columns}
    columns = tuple(
        Column(name, f.dataType.simpleString().upper(), comments.get(name.lower()))
        for name, f in zip(names, visible, strict=True)
    )
    for name, relation in relations.items():
        if isinstance(relation, TableEntry) and not relation.change_tracking:
            tables.alter_properties(
                spark, catalog, AlterTableProperties(name, {"change_tracking": "true"})
            )
    location = str(warehouse / f"{stmt.name}-{uuid.uuid4().hex[:12]}")
    definitions = [
        f"{quote_name(c.name)} {c.type}"
        + (f" COMMENT {sql_string(c.comment)}" if c.comment else "")
        for c in columns
    ] + [
        f"{quote_name(name)} {f.dataType.simpleString()}"
        for name, f in zip(plan.hidden, schema.fields[len(visible) :], strict=True)
    ]
    comment = f" COMMENT {sql_string(stmt.comment)}" if stmt.comment else ""
    # A projection's refresh deletes rows scattered over a table as large as its sources:
    # deletion vectors mark them instead of rewriting every file. An aggregate is small and
    # every file is touched anyway, where rewriting measured faster.
    vectors = "false" if plan.shape == AGGREGATE else "true"
    spark.sql(
        f"CREATE TABLE {delta_ref(location)} ({', '.join(definitions)}) USING delta{comment} "
        "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', "
        f"'delta.enableDeletionVectors' = '{vectors}')"
    )
    entry = DynamicTableEntry(
        stmt.name,
        location,
        stmt.query_text,
        sources,
        columns,
        plan.hidden,
        stmt.comment,
        stmt.refresh_interval_seconds,
        stmt.vcluster,
    )
    try:
        replaced = catalog.add_dynamic_table(entry, replace_existing=stmt.or_replace)
    except LakeError:
        tables.remove_files(location)
        raise
    catalog.record_table_state(entry, 0, 0)
    verb = "replaced" if replaced is not None else "created"
    try:
        outcome = refresh(spark, catalog, stmt.name, CREATION)
    except LakeError as error:
        _undo_create(catalog, entry, replaced)
        what = f"dynamic table {stmt.name} was not {verb}: {error.what}"
        raise LakeError(what, error.fix) from error
    if replaced is not None:
        tables.remove_files(replaced.location)
    return Result.status(f"{verb} dynamic table {stmt.name}; {outcome.summary()}")


def _undo_create(
    catalog: Catalog, entry: DynamicTableEntry, replaced: DynamicTableEntry | None
) -> None:
    """A CREATE whose first refresh failed leaves nothing behind (or the table it replaced)."""
    if replaced is None:
        catalog.remove_dynamic_table(entry.name)
    else:
        catalog.add_dynamic_table(replaced, replace_existing=True)
        if replaced.version is not None and replaced.row_count is not None:
            catalog.record_table_state(replaced, replaced.version, replaced.row_count)
    tables.remove_files(entry.location)


def _column_names(stmt: CreateDynamicTable, produced: list[str]) -> list[str]:
    if stmt.columns and len(stmt.columns) != len(produced):
        raise LakeError(
            f"dynamic table {stmt.name} lists {len(stmt.columns)} columns but its query "
            f"returns {len(produced)}",
            "name one column per select item, or leave the column list out",
        )
    names = [c.name for c in stmt.columns] if stmt.columns else produced
    for name in names:
        if _BAD_COLUMN_NAME.search(name) or name.lower().startswith("__lake_"):
            raise LakeError(
                f"the result column '{name}' of dynamic table {stmt.name} needs a plain name",
                "give it an alias in the query, e.g. COUNT(*) AS order_cnt",
            )
    lowered = [name.lower() for name in names]
    twice = sorted({name for name in lowered if lowered.count(name) > 1})
    if twice:
        raise LakeError(
            f"column {twice[0]} appears twice in the result of dynamic table {stmt.name}",
            "give the columns distinct aliases",
        )
    return names


def _refuse_cycle(catalog: Catalog, name: str, sources: tuple[str, ...]) -> None:
    """A dynamic table may not read itself, directly or through other dynamic tables."""
    definitions = {entry.name: entry.sources for entry in catalog.dynamic_tables()}
    definitions[name] = sources
    path = _path_to(definitions, sources, name, [name])
    if path is not None:
        raise LakeError(
            f"dynamic table {name} would read itself: {' → '.join(path)}",
            "dynamic tables must form a graph without cycles; read the sources instead",
        )


def _path_to(
    definitions: dict[str, tuple[str, ...]], sources: tuple[str, ...], target: str, path: list[str]
) -> list[str] | None:
    for source in sources:
        if source == target:
            return [*path, source]
        if source in definitions and source not in path:
            found = _path_to(definitions, definitions[source], target, [*path, source])
            if found is not None:
                return found
    return None


def drop_dynamic_table(catalog: Catalog, stmt: DropDynamicTable) -> Result:
    if catalog.find_dynamic_table(stmt.name) is None and stmt.if_exists:
        return Result.status(f"dynamic table {stmt.name} does not exist; nothing to do")
    catalog.dynamic_table(stmt.name)
    readers = catalog.dynamic_readers(stmt.name)
    if readers:
        raise LakeError(
            f"dynamic table {stmt.name} is read by dynamic table {readers[0]}",
            f"drop dynamic table {readers[0]} first",
        )
    entry = catalog.remove_dynamic_table(stmt.name)
    if entry is not None:
        tables.remove_files(entry.location)
    return Result.status(f"dropped dynamic table {stmt.name}")


def alter_dynamic_table(catalog: Catalog, stmt: AlterDynamicTable) -> Result:
    catalog.set_suspended(stmt.name, stmt.suspended)
    state = "SUSPENDED" if stmt.suspended else "ACTIVE"
    return Result.status(f"dynamic table {stmt.name} is {state}")


# SHOW / DESC / history: catalog only, no Spark


def show_dynamic_tables(catalog: Catalog) -> Result:
    rows = []
    for entry in catalog.dynamic_tables():
        last = _last(catalog, entry.name)
        rows.append(
            (
                entry.name,
                "SUSPENDED" if entry.suspended else "ACTIVE",
                _interval_text(entry.refresh_interval_seconds),
                ", ".join(entry.sources),
                last.start_time if last else None,
                last.refresh_mode if last else None,
                entry.row_count,
                entry.comment,
                entry.created_at,
            )
        )
    return Result(
        [
            "name", "state", "refresh_interval", "sources", "last_refresh_time",
            "last_refresh_mode", "rows", "comment", "created_at",
        ],
        rows,
    )  # fmt: skip


def _last(catalog: Catalog, name: str, committed: bool = False) -> RefreshRecord | None:
    for record in catalog.refresh_history(name):
        if not committed or record.dt_version is not None:
            return record
    return None


def _interval_text(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    for unit, size in (("DAY", 86400), ("HOUR", 3600), ("MINUTE", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} SECOND"


def next_mode(catalog: Catalog, entry: DynamicTableEntry) -> tuple[str, str | None]:
    """The mode the next refresh that finds changes will use, and why when it is FULL."""
    plan = plan_of(entry)
    if plan.reason:
        return FULL, plan.reason
    if _last(catalog, entry.name, committed=True) is None:
        return FULL, "initial refresh"
    for name in entry.sources:
        relation = catalog.relation(name)
        if isinstance(relation, TableEntry) and not relation.change_tracking:
            return FULL, f"change tracking is off on {name}; the refresh turns it on"
    return INCREMENTAL, None


def describe_dynamic_table(catalog: Catalog, stmt: DescribeDynamicTable) -> Result:
    entry = catalog.dynamic_table(stmt.name)
    last = _last(catalog, entry.name)
    committed = _last(catalog, entry.name, committed=True)
    mode, why = next_mode(catalog, entry)
    read = committed.source_tables if committed else {}
    return Result.properties(
        name=entry.name,
        query=entry.query,
        sources=", ".join(
            f"{name}@{read[name]}" if name in read else name for name in entry.sources
        ),
        columns=", ".join(f"{c.name} {c.type}" for c in entry.columns),
        refresh_interval=_interval_text(entry.refresh_interval_seconds),
        vcluster=entry.vcluster,
        state="SUSPENDED" if entry.suspended else "ACTIVE",
        last_refresh=(
            f"{last.start_time} {last.state} {last.refresh_mode or ''}".strip() if last else None
        ),
        refresh_mode=mode,
        refresh_mode_reason=why,
        rows=entry.row_count,
        version=entry.version,
        location=entry.location,
        comment=entry.comment,
        created_at=entry.created_at,
    )


HISTORY_COLUMNS = [
    "name", "state", "refresh_mode", "refresh_trigger", "start_time", "end_time", "duration",
    "source_tables", "rows_inserted", "rows_deleted", "error_message", "reason",
]  # fmt: skip


def show_refresh_history(catalog: Catalog, stmt: ShowRefreshHistory) -> Result:
    if stmt.name is not None:
        catalog.dynamic_table(stmt.name)
    return Result(
        HISTORY_COLUMNS,
        [
            (
                r.name, r.state, r.refresh_mode, r.refresh_trigger, r.start_time, r.end_time,
                round(r.duration, 3),
                ", ".join(f"{name}@{version}" for name, version in r.source_tables.items()),
                r.rows_inserted, r.rows_deleted, r.error_message, r.reason,
            )
            for r in catalog.refresh_history(stmt.name)
        ],
    )  # fmt: skip


# Refresh


def record_skipped(catalog: Catalog, name: str, trigger: str, reason: str) -> RefreshOutcome:
    """Record a refresh that did not run (suspended, or an upstream refresh failed)."""
    now = now_utc()
    catalog.record_refresh(
        RefreshRecord(
            uuid.uuid4().hex, name, SKIPPED, None, trigger, now, now, 0.0, {}, reason=reason
        )
    )
    return RefreshOutcome(name, SKIPPED, None, trigger, reason)


def refresh(
    spark: SparkSession, catalog: Catalog, name: str, trigger: str = MANUAL, *, full: bool = False
) -> RefreshOutcome:
    """Bring a dynamic table up to date in one commit; a failure is recorded, then raised.

    `full` recomputes even when the changes could be applied (benchmarks compare the two)."""
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown refresh trigger {trigger}")
    entry = catalog.dynamic_table(name)
    if entry.suspended and trigger in (SCHEDULED, UPSTREAM):
        return record_skipped(catalog, name, trigger, "the dynamic table is suspended")
    start, clock = now_utc(), time.monotonic()
    try:
        return _refresh(spark, catalog, entry, trigger, start, clock, full)
    except Exception as error:
        failure = error if isinstance(error, LakeError) else _translate(catalog, error)
        catalog.record_refresh(
            RefreshRecord(
                uuid.uuid4().hex, name, FAILED, None, trigger, start, now_utc(),
                time.monotonic() - clock, {}, error_message=str(failure),
            )
        )  # fmt: skip
        if failure is error:
            raise
        raise failure from error


def _translate(catalog: Catalog, error: Exception) -> LakeError:
    locations = tables.table_locations([*catalog.tables(), *catalog.dynamic_tables()])
    translated = translate_spark_error(error, locations)
    if translated is not None:
        return translated
    return LakeError(str(error).splitlines()[0], "run again with --debug to see the traceback")


def _source_read(
    spark: SparkSession,
    name: str,
    relation: TableEntry | DynamicTableEntry,
    previous: list[Any] | None,
    index: int,
) -> SourceRead:
    version = history(spark, relation.location, 1)[0].version
    last = previous[1] if previous and previous[0] == relation.location else None
    columns = (
        tuple(c.name for c in relation.columns) if isinstance(relation, DynamicTableEntry) else None
    )
    return SourceRead(name, relation.location, columns, version, last, index)


def _refresh(
    spark: SparkSession,
    catalog: Catalog,
    entry: DynamicTableEntry,
    trigger: str,
    start: str,
    clock: float,
    full: bool,
) -> RefreshOutcome:
    previous, dt_version = _reconcile(spark, catalog, entry)
    entry = catalog.dynamic_table(entry.name)
    rows_before = (
        entry.row_count
        if entry.version == dt_version and entry.row_count is not None
        else row_count(spark, entry.location, dt_version)
    )
    plan = plan_of(entry)
    enabled = []
    for name in entry.sources:
        relation = catalog.relation(name)
        if isinstance(relation, TableEntry) and not relation.change_tracking:
            tables.alter_properties(
                spark, catalog, AlterTableProperties(name, {"change_tracking": "true"})
            )
            enabled.append(name)
    consumed = previous["sources"] if previous else {}
    reads = [
        _source_read(spark, name, catalog.relation(name), consumed.get(name), index)
        for index, name in enumerate(entry.sources)
    ]
    versions = {read.name: read.version for read in reads}
    if previous is not None and not full and not any(read.changed for read in reads):
        record = RefreshRecord(
            uuid.uuid4().hex, entry.name, SUCCEED, NO_DATA, trigger, start, now_utc(),
            time.monotonic() - clock, versions, 0, 0,
        )  # fmt: skip
        catalog.record_refresh(record)
        return _outcome(record)
    reason = plan.reason or ("a full refresh was asked for" if full else None)
    if reason is None and previous is None:
        reason = "initial refresh"
    if reason is None and enabled:
        reason = f"change tracking was just turned on for {', '.join(enabled)}"
    if reason is None:
        replaced = [read.name for read in reads if read.previous is None]
        if replaced:
            reason = f"{', '.join(replaced)} was replaced since the last refresh"
    metadata: dict[str, Any] = {
        "lake_refresh": 1,
        "id": uuid.uuid4().hex,
        "trigger": trigger,
        "start": start,
        "sources": {read.name: [read.location, read.version] for read in reads},
    }
    query = _query(entry)
    commit = None
    if reason is None:
        try:
            with session_conf(spark, incremental_conf(spark)):
                commit = _write_incremental(spark, entry, plan, query, reads, dt_version, metadata)
        except Exception as error:
            if not any(condition in str(error) for condition in _FEED_GONE):
                raise
            first = str(error).strip().splitlines()[0][:300]
            reason = f"the change data feed could not be read: {first}"
    if reason is not None:
        metadata.update(mode=FULL, reason=reason, replaced_rows=rows_before)
        commit = _write_full(spark, entry, plan, query, reads, dt_version, metadata)
    failpoints.reached(failpoints.REFRESH_AFTER_COMMIT)
    record = _record_from_commit(entry.name, commit, metadata=None)
    record = replace(record, end_time=now_utc(), duration=time.monotonic() - clock)
    catalog.record_refresh(record)
    rows_after = rows_before + (record.rows_inserted or 0) - (record.rows_deleted or 0)
    catalog.record_table_state(entry, commit.version, rows_after)
    return _outcome(record)


def _outcome(record: RefreshRecord) -> RefreshOutcome:
    return RefreshOutcome(
        record.name,
        record.state,
        record.refresh_mode,
        record.refresh_trigger,
        record.reason,
        record.rows_inserted or 0,
        record.rows_deleted or 0,
        record.source_tables,
        record.duration,
        record.dt_version,
        record.error_message,
    )


def _write_incremental(
    spark: SparkSession,
    entry: DynamicTableEntry,
    plan: Plan,
    query: exp.Expression,
    reads: list[SourceRead],
    dt_version: int,
    metadata: dict[str, Any],
) -> Commit:
    metadata["mode"] = INCREMENTAL
    register_sources(spark, reads, changes=True)
    by_name = {read.name: read for read in reads}
    schema = table_at(spark, entry.location, dt_version).schema
    visible = [c.name for c in entry.columns]
    if plan.shape == AGGREGATE:
        merge = aggregate_merge(
            spark, plan, query, by_name, entry.location, dt_version, schema, visible
        )
        with _committing(spark, entry, dt_version, metadata):
            spark.sql(merge).collect()
        return _find_commit(spark, entry, metadata)
    # Computed once, here: the emptiness check, the pruning ranges and the MERGE source read it.
    changes = result_changes(spark, plan.branches, by_name, visible).localCheckpoint()
    merge = projection_merge(spark, entry.location, dt_version, changes, schema)
    with _committing(spark, entry, dt_version, metadata):
        if merge is not None:
            spark.sql(merge).collect()
        else:
            gained_rows(changes, schema).write.format("delta").mode("append").save(entry.location)
    return _find_commit(spark, entry, metadata)


def _write_full(
    spark: SparkSession,
    entry: DynamicTableEntry,
    plan: Plan,
    query: exp.Expression,
    reads: list[SourceRead],
    dt_version: int,
    metadata: dict[str, Any],
) -> Commit:
    register_sources(spark, reads, changes=False)
    names = [c.name for c in entry.columns] + list(entry.hidden)
    frame = full_result(spark, plan, query, {read.name: read for read in reads}, names)
    with _committing(spark, entry, dt_version, metadata):
        frame.write.format("delta").mode("overwrite").option(
            "maxRecordsPerFile", pruning.ROWS_PER_FILE
        ).save(entry.location)
    return _find_commit(spark, entry, metadata)


@contextmanager
def _committing(
    spark: SparkSession, entry: DynamicTableEntry, dt_version: int, metadata: dict[str, Any]
) -> Iterator[None]:
    """Writes inside carry the refresh record and are fenced against a concurrent refresh:
    Delta skips a second write with the same transaction version."""
    settings = {
        COMMIT_TAG_CONF: json.dumps(metadata),
        _TXN_APP_CONF: f"lake-refresh-{Path(entry.location).name}",
        _TXN_VERSION_CONF: str(dt_version + 1),
        MATERIALIZE_SOURCE_CONF: "none",
    }
    with session_conf(spark, settings):
        failpoints.reached(failpoints.REFRESH_BEFORE_COMMIT)
        yield


def incremental_conf(spark: SparkSession) -> dict[str, str]:
    """An incremental refresh's plans are small: static plans (no per-stage jobs and re-planning)
    and one shuffle partition per core at most (one wave of tasks, fewer files to rewrite).
    Each took 6-24 % and about 10 % off refreshes after 3-row changes on 1M rows (noisy runs)."""
    configured = spark.conf.get("spark.sql.shuffle.partitions")
    cores = spark.conf.get("spark.default.parallelism", configured)
    partitions = min(int(configured), int(cores))
    return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions)}


def _find_commit(spark: SparkSession, entry: DynamicTableEntry, metadata: dict[str, Any]) -> Commit:
    for commit in history(spark, entry.location, _HISTORY_WINDOW):
        found = _refresh_metadata(commit.user_metadata)
        if found is not None and found["id"] == metadata["id"]:
            return commit
    raise LakeError(
        f"another refresh of dynamic table {entry.name} committed at the same moment; "
        "this one wrote nothing",
        "refresh it again if needed: it starts from what the other refresh committed",
    )


def _refresh_metadata(user_metadata: str | None) -> dict[str, Any] | None:
    if not user_metadata or not user_metadata.startswith('{"lake_refresh"'):
        return None
    return json.loads(user_metadata)


def _record_from_commit(
    name: str, commit: Commit, metadata: dict[str, Any] | None
) -> RefreshRecord:
    """The history row of a refresh commit, from what the commit itself carries."""
    metadata = metadata or _refresh_metadata(commit.user_metadata)
    assert metadata is not None
    inserted, updated, deleted = row_changes(commit.operation, commit.operation_metrics) or (
        0, 0, 0,
    )  # fmt: skip
    if metadata["mode"] == FULL:
        inserted, deleted = inserted, metadata["replaced_rows"]
    else:
        inserted, deleted = inserted + updated, deleted + updated
    end = commit.timestamp
    end_text = end.isoformat(timespec="milliseconds")
    started = datetime.fromisoformat(metadata["start"])
    duration = (end.replace(tzinfo=started.tzinfo) - started).total_seconds()
    return RefreshRecord(
        metadata["id"], name, SUCCEED, metadata["mode"], metadata["trigger"], metadata["start"],
        end_text, max(duration, 0.0),
        {source: version for source, (_, version) in metadata["sources"].items()},
        inserted, deleted, None, metadata.get("reason"), commit.version,
    )  # fmt: skip


def _reconcile(
    spark: SparkSession, catalog: Catalog, entry: DynamicTableEntry
) -> tuple[dict[str, Any] | None, int]:
    """The last committed refresh's record (re-indexed if the index missed it) and the table's
    current version."""
    commits = history(spark, entry.location, _HISTORY_WINDOW)
    version = commits[0].version
    for commit in commits:
        metadata = _refresh_metadata(commit.user_metadata)
        if metadata is not None:
            catalog.record_refresh(_record_from_commit(entry.name, commit, metadata))
            if entry.version != version:
                catalog.record_table_state(
                    entry, version, row_count(spark, entry.location, version)
                )
            return metadata, version
    return None, version
