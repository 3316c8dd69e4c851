"""Dynamic tables: CREATE [OR REPLACE], DROP, ALTER … SUSPEND|RESUME|SET/DROP PRIMARY KEY; SHOW,
DESC and the refresh history are in `describing`, the refresh itself is in `refresh`."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

from lake_assets.core.catalog import Catalog, CatalogView
from lake_assets.core.delta import quote_name, sql_string
from lake_assets.core.entries import RELATION, Column
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import name_taken
from lake_assets.core.names import HIDDEN_PREFIX, refuse_repeated_columns
from lake_assets.core.results import Result
from lake_assets.dynamic_tables.entry import (
    DOWNSTREAM,
    DynamicTableEntry,
    RefreshModeChoice,
    SchedulingState,
)
from lake_assets.dynamic_tables.expected import kept
from lake_assets.dynamic_tables.grammar import (
    AlterDynamicTable,
    AlterDynamicTablePrimaryKey,
    CreateDynamicTable,
    RefreshDynamicTable,
)
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.stage import stage_views
from lake_assets.dynamic_tables.refresh import Refreshed, refresh
from lake_assets.dynamic_tables.refreshes import RefreshTrigger
from lake_assets.dynamic_tables.rewrites import runnable
from lake_assets.dynamic_tables.runtime.sources import full_result, register_sources, schema_of
from lake_assets.dynamic_tables.steps.lower import query_of
from lake_assets.dynamic_tables.steps.read_sources import source_read
from lake_assets.dynamic_tables.targets import refuse_stuck
from lake_assets.sql.binding import referenced_tables
from lake_assets.sql.statements import DropObject
from lake_assets.sql.types import type_text
from lake_assets.streams.entry import StreamEntry
from lake_assets.tables.enforcing import check_conditions
from lake_assets.tables.engine import (
    create_delta_table,
    enable_change_tracking,
    remove_files,
    set_primary_key,
)
from lake_assets.tables.entry import TableEntry, declared_key
from lake_assets.tables.expectations import declared_expectations
from lake_assets.views.reading import base_relations, refuse_cycle

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# Delta takes these characters in column names only with column mapping, which a dynamic table
# turns on when its result has such a name (Spark's for an unnamed expression: `sum(amount)`).
_MAPPED_COLUMN_NAME = re.compile(r"[ ,;{}()\n\t=]")
_ACYCLIC = "dynamic tables must form a graph without cycles; read the sources instead"


# CREATE / DROP / ALTER


def create_dynamic_table(session: Context, stmt: CreateDynamicTable) -> Result:
    spark, catalog = session.spark, session.catalog
    previous = catalog.find(DynamicTableEntry, stmt.name) if stmt.or_replace else None
    if previous is None and (
        taken := name_taken(session, DynamicTableEntry, stmt.name, stmt.if_not_exists)
    ):
        return taken
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
    streams = [name for name, relation in relations.items() if isinstance(relation, StreamEntry)]
    if streams:
        raise LakeError(
            f"dynamic table {stmt.name} cannot read stream {streams[0]}: a refresh reads its "
            "sources' changes itself",
            "read the stream's source table instead",
        )
    refuse_stuck(
        catalog,
        stmt.name,
        stmt.target_lag,
        stmt.refresh_interval_seconds,
        base_relations(sources, catalog.find_relation),
    )
    # The views it reads are read as the queries they stand for: their relations are the refresh's.
    expression = query_of(catalog, stmt.name, stmt.query.expression)
    stored = {name: catalog.stored(name) for name in base_relations(sources, catalog.find_relation)}
    # Checked now, before any Spark work, and again as the entry is written (below).
    refuse_cycle("dynamic table", stmt.name, sources, catalog.find_relation, _ACYCLIC)
    known = {name: [c.name for c in relation.columns] for name, relation in stored.items()}
    query = runnable(expression, known)
    reads = [
        source_read(spark, name, relation, None, index)
        for index, (name, relation) in enumerate(stored.items())
    ]
    register_sources(spark, reads, changes=False)
    # The columns are the query's as written (a query over stages names its items otherwise).
    visible = schema_of(spark, query, reads)
    names = _column_names(stmt, [f.name for f in visible])
    comments = {c.name.lower(): c.comment for c in stmt.columns}
    columns = tuple(
        Column(name, type_text(f.dataType), comments.get(name.lower()))
        for name, f in zip(names, visible, strict=True)
    )
    what = f"dynamic table {stmt.name}"
    expectations = declared_expectations(what, columns, stmt.expectations)
    if expectations:
        rows = full_result(spark, query, {read.name: read for read in reads}, names)
        check_conditions(what, rows, expectations)
    # The plan of the rows it holds: those its DROP ROW expectations let in (see expected).
    plan = classify(kept(query, names, expectations), known)
    if stmt.refresh_mode is RefreshModeChoice.INCREMENTAL and plan.reason:
        raise LakeError(
            f"dynamic table {stmt.name} cannot refresh INCREMENTAL: {plan.reason}",
            "use REFRESH_MODE = AUTO (it refreshes FULL) or FULL, or rewrite the query",
        )
    stage_views(spark, plan, reads)
    # The state columns, those its plan appends.
    hidden = schema_of(spark, plan.stateful, reads)[len(visible) :] if plan.hidden else []
    primary_key = _kept_key(stmt.name, previous, columns)
    for name, relation in stored.items():
        if isinstance(relation, TableEntry) and not relation.change_tracking:
            enable_change_tracking(spark, catalog, name)
    location = session.warehouse_path(f"{stmt.name}-{uuid.uuid4().hex[:12]}")
    definitions = [
        f"{quote_name(c.name)} {c.type}"
        + (f" COMMENT {sql_string(c.comment)}" if c.comment else "")
        for c in columns
    ] + [
        f"{quote_name(name)} {f.dataType.simpleString()}"
        for name, f in zip(plan.hidden, hidden, strict=True)
    ]
    vectors = "true" if plan.deletion_vectors else "false"
    entry = DynamicTableEntry(
        stmt.name,
        location,
        columns,
        stmt.query_text,
        sources,
        plan.hidden,
        stmt.comment,
        stmt.refresh_interval_seconds,
        stmt.vcluster,
        primary_key=primary_key,
        refresh_mode=stmt.refresh_mode,
        target_lag_seconds=stmt.target_lag.seconds if stmt.target_lag else None,
        lag_downstream=stmt.target_lag == DOWNSTREAM,
        expectations=expectations,
    )
    properties = {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": vectors}
    if any(_MAPPED_COLUMN_NAME.search(column.name) for column in columns):
        properties["delta.columnMapping.mode"] = "name"
    result = _create(session, entry, definitions, properties, stmt.or_replace)
    session.committed(entry.name)  # its first refresh filled it: an event of its asset
    return result


def _create(
    session: Context,
    entry: DynamicTableEntry,
    definitions: list[str],
    properties: dict[str, str],
    or_replace: bool,
) -> Result:
    """Create the Delta table, register it and run the first refresh; whatever fails on the
    way, nothing is left behind (the replaced table is back) and the failure is raised."""
    spark, catalog = session.spark, session.catalog
    try:
        create_delta_table(spark, entry.location, definitions, entry.comment, properties)
        replaced = _register(catalog, entry, or_replace)
    except BaseException:
        remove_files(entry.location)
        raise
    verb = "replaced" if replaced is not None else "created"
    try:
        catalog.record_table_state(entry, 0, 0)
        outcome = refresh(
            spark, catalog, entry.name, RefreshTrigger.CREATION, upstream=_heard(session)
        )
    except LakeError as error:
        _undo_create(catalog, entry, replaced)
        what = f"dynamic table {entry.name} was not {verb}: {error.what}"
        raise LakeError(what, error.fix) from error
    except BaseException:
        _undo_create(catalog, entry, replaced)
        raise
    if replaced is not None:
        remove_files(replaced.location)
    return Result.status(f"{verb} dynamic table {entry.name}; {outcome.summary()}")


def _register(
    catalog: Catalog, entry: DynamicTableEntry, or_replace: bool
) -> DynamicTableEntry | None:
    """Write the entry, checking in the same transaction that it closes no cycle (another
    CREATE OR REPLACE may have changed what the other dynamic tables read); return the one it
    replaced."""

    def acyclic(view: CatalogView) -> None:
        refuse_cycle(
            "dynamic table",
            entry.name,
            entry.sources,
            lambda name: view.find_in(RELATION, name),
            _ACYCLIC,
        )

    if or_replace:
        return catalog.replace(entry, acyclic)
    catalog.add(entry, acyclic)
    return None


def _undo_create(
    catalog: Catalog, entry: DynamicTableEntry, replaced: DynamicTableEntry | None
) -> None:
    """A CREATE whose first refresh failed, however, leaves nothing behind (or the table it
    replaced)."""
    if replaced is None:
        catalog.remove(DynamicTableEntry, entry.name)
    else:
        catalog.replace(replaced)
        if replaced.version is not None and replaced.row_count is not None:
            catalog.record_table_state(replaced, replaced.version, replaced.row_count)
    remove_files(entry.location)


def _kept_key(
    name: str, previous: DynamicTableEntry | None, columns: tuple[Column, ...]
) -> tuple[str, ...]:
    """OR REPLACE keeps the replaced table's key, so that its readers keep keying rows by it."""
    if previous is None or not previous.primary_key:
        return ()
    try:
        return declared_key(f"dynamic table {name}", columns, previous.primary_key)
    except LakeError as error:
        raise LakeError(
            f"dynamic table {name} keeps its primary key ({', '.join(previous.primary_key)}) "
            f"when replaced, but {error.what}",
            f"return the key's columns from the new query, or first ALTER DYNAMIC TABLE {name} "
            "DROP PRIMARY KEY",
        ) from error


def _column_names(stmt: CreateDynamicTable, produced: list[str]) -> list[str]:
    if stmt.columns and len(stmt.columns) != len(produced):
        raise LakeError(
            f"dynamic table {stmt.name} lists {len(stmt.columns)} columns but its query "
            f"returns {len(produced)}",
            "name one column per select item, or leave the column list out",
        )
    names = [c.name for c in stmt.columns] if stmt.columns else produced
    for name in names:
        if name.lower().startswith(HIDDEN_PREFIX):
            raise LakeError(
                f"the result column '{name}' of dynamic table {stmt.name} starts with "
                f"{HIDDEN_PREFIX}, which the lakehouse keeps for its own columns",
                "give it another alias in the query",
            )
    refuse_repeated_columns(f"dynamic table {stmt.name}", names)
    return names


def drop_dynamic_table(session: Context, stmt: DropObject) -> Result:
    catalog = session.catalog
    if catalog.find(DynamicTableEntry, stmt.name) is None and stmt.if_exists:
        return Result.status(f"dynamic table {stmt.name} does not exist; nothing to do")
    catalog.get(DynamicTableEntry, stmt.name)
    entry = catalog.remove(DynamicTableEntry, stmt.name, unused=True)
    if entry is not None:
        remove_files(entry.location)
    return Result.status(f"dropped dynamic table {stmt.name}")


def refresh_dynamic_table(session: Context, stmt: RefreshDynamicTable) -> Result:
    def run() -> Result:
        outcome = refresh(session.spark, session.catalog, stmt.name, upstream=_heard(session))
        return Result.status(outcome.summary())

    return session.committing(stmt.name, run)


def _heard(session: Context) -> Refreshed:
    """A refresh of an upstream dynamic table made for one downstream is heard as a commit."""
    return lambda outcome: session.committed(outcome.name)


def alter_dynamic_table(session: Context, stmt: AlterDynamicTable) -> Result:
    session.catalog.update(
        DynamicTableEntry, stmt.name, lambda entry: replace(entry, suspended=stmt.suspended)
    )
    state = SchedulingState.SUSPENDED if stmt.suspended else SchedulingState.ACTIVE
    return Result.status(f"dynamic table {stmt.name} is {state}")


def alter_primary_key(session: Context, stmt: AlterDynamicTablePrimaryKey) -> Result:
    return set_primary_key(session.catalog, DynamicTableEntry, stmt.name, stmt.primary_key)
