"""Table DDL and metadata statements: CREATE, DROP, ALTER … SET PROPERTIES | SET/DROP PRIMARY KEY
| CLUSTER BY, OPTIMIZE, DESC, SHOW, HISTORY."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog, unknown_table
from lake_assets.core.commits import committing
from lake_assets.core.delta import (
    delta_ref,
    history,
    log_versions,
    quote_name,
    remove_location,
    row_changes,
    sql_string,
)
from lake_assets.core.entries import StoredRelation
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import name_taken
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.results import Result
from lake_assets.core.writes import commit_write
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.enforcing import check_conditions
from lake_assets.tables.entry import (
    RESCUED_DATA_COLUMN,
    SCHEMA_EVOLUTION,
    TableEntry,
    clustering_columns,
    declared_key,
    table_named,
)
from lake_assets.tables.grammar import (
    AlterTableClustering,
    AlterTablePrimaryKey,
    AlterTableProperties,
    CreateTable,
    DescribeHistory,
    DescribeTable,
    DropTable,
    Optimize,
    ShowTables,
)
from lake_assets.tables.layout import clustered_by

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
LAYOUT_COMMITTED = "table.layout.committed"

# The dialect's table properties (SET PROPERTIES): those Delta keeps, by the property they map to,
# and those only the catalog keeps (what a load does with columns its files bring).
_DELTA_PROPERTIES = {"change_tracking": "delta.enableChangeDataFeed"}
_CATALOG_PROPERTIES = (SCHEMA_EVOLUTION, RESCUED_DATA_COLUMN)
_BOOLEAN_VALUES = ("true", "false")


def _checked_properties(entry: TableEntry, properties: dict[str, str]) -> dict[str, str]:
    """The properties to record, each checked; refuses an unknown one or a bad value."""
    checked: dict[str, str] = {}
    for key, value in properties.items():
        if key not in (*_DELTA_PROPERTIES, *_CATALOG_PROPERTIES):
            known = ", ".join(sorted((*_DELTA_PROPERTIES, *_CATALOG_PROPERTIES)))
            raise LakeError(f"unknown table property '{key}'", f"use one of: {known}")
        if key == RESCUED_DATA_COLUMN:
            checked[key] = _rescued_column(entry, value)
        elif value.lower() not in _BOOLEAN_VALUES:
            raise LakeError(
                f"property '{key}' must be 'true' or 'false', not '{value}'", "fix the value"
            )
        else:
            checked[key] = value.lower()
    return checked


def _rescued_column(entry: TableEntry, name: str) -> str:
    """The STRING column a load keeps what its files bring beyond the table in ('': none)."""
    found = next((c for c in entry.columns if c.name.lower() == name.lower()), None)
    if name and (found is None or found.type != "STRING"):
        raise LakeError(
            f"table {entry.name} has no STRING column {name} to keep rescued data in",
            f"add it first: ALTER TABLE {entry.name} ADD COLUMN {name} STRING",
        )
    return found.name if found is not None else ""


def create_table(session: Context, stmt: CreateTable) -> Result:
    catalog = session.catalog
    if taken := name_taken(session, TableEntry, stmt.name, stmt.if_not_exists):
        return taken
    # A fresh directory per table: a dropped table's files can never leak into a new one.
    location = session.warehouse_path(f"{stmt.name}-{uuid.uuid4().hex[:12]}")
    columns = [
        f"{quote_name(column.name)} {column.type}"
        + (f" COMMENT {sql_string(column.comment)}" if column.comment else "")
        for column in stmt.columns
    ]
    create_delta_table(session.spark, location, columns, stmt.comment, cluster_by=stmt.cluster_by)
    try:
        entry = TableEntry(
            stmt.name,
            location,
            stmt.columns,
            stmt.comment,
            primary_key=stmt.primary_key,
            cluster_by=stmt.cluster_by,
            expectations=stmt.expectations,
        )
        if entry.expectations:
            rows = session.spark.read.format("delta").load(entry.location)
            check_conditions(f"table {entry.name}", rows, entry.expectations)
        entry = catalog.add(entry)
    except LakeError:
        remove_files(location)
        raise
    catalog.record_table_state(entry, 0, 0)
    return Result.status(f"created table {stmt.name}")


def create_delta_table(
    spark: SparkSession,
    location: str,
    columns: Sequence[str],
    comment: str | None,
    properties: Mapping[str, str] | None = None,
    cluster_by: Sequence[str] = (),
) -> None:
    """The one place Delta tables are created; `cluster_by` names the columns OPTIMIZE lays its
    files out by."""
    # Tables start without row tracking, although a stream on an existing table then shows the
    # ROW TRACKING BACKFILL commit as the version of rows written before it: with Delta 4.4 every
    # commit to a row-tracking table costs ~0.75 s more on local[2] (measured: a 66k-row INSERT
    # 0.38 s → 1.17 s, a 2M-row one 0.96 s → 1.70 s), which every load and refresh would pay.
    assignments = ", ".join(
        f"{sql_string(key)} = {sql_string(value)}" for key, value in (properties or {}).items()
    )
    described = f" COMMENT {sql_string(comment)}" if comment else ""
    settings = f" TBLPROPERTIES ({assignments})" if assignments else ""
    clustered = f" CLUSTER BY ({_names(cluster_by)})" if cluster_by else ""
    spark.sql(
        f"CREATE TABLE {delta_ref(location)} ({', '.join(columns)}) USING delta{clustered}"
        + described
        + settings
    )


def _names(columns: Sequence[str]) -> str:
    return ", ".join(quote_name(column) for column in columns)


def drop_table(session: Context, stmt: DropTable) -> Result:
    catalog = session.catalog
    other = catalog.find_relation(stmt.name)
    if other is not None and not isinstance(other, TableEntry):
        words = other.CREATE.removeprefix("CREATE ")
        raise LakeError(f"{stmt.name} is a {other.LABEL}", f"drop it with DROP {words} {stmt.name}")
    entry = catalog.remove(TableEntry, stmt.name, unused=True)
    if entry is None:
        if stmt.if_exists:
            return Result.status(f"table {stmt.name} does not exist; nothing to do")
        raise unknown_table(stmt.name)
    remove_files(entry.location)
    return Result.status(f"dropped table {stmt.name}")


def remove_files(location: str) -> None:
    """Delete a table's files, on the local filesystem or in S3."""
    remove_location(location)


def alter_properties(session: Context, stmt: AlterTableProperties) -> Result:
    set_properties(session.spark, session.catalog, stmt.name, stmt.properties)
    return Result.status(f"altered table {stmt.name}")


def enable_change_tracking(spark: SparkSession, catalog: Catalog, name: str) -> None:
    """Turn on the change data feed, for readers of the table's changes."""
    set_properties(spark, catalog, name, {"change_tracking": "true"})


def set_properties(
    spark: SparkSession, catalog: Catalog, name: str, properties: dict[str, str]
) -> None:
    entry = catalog.get(TableEntry, name)
    checked = _checked_properties(entry, properties)
    delta = {_DELTA_PROPERTIES[k]: v for k, v in checked.items() if k in _DELTA_PROPERTIES}
    if delta:
        ensure_log_intact(entry)  # a property change is a commit too
        assignments = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in delta.items())
        spark.sql(f"ALTER TABLE {delta_ref(entry.location)} SET TBLPROPERTIES ({assignments})")
    catalog.update(
        TableEntry, name, lambda entry: replace(entry, properties={**entry.properties, **checked})
    )


def alter_primary_key(session: Context, stmt: AlterTablePrimaryKey) -> Result:
    return set_primary_key(session.catalog, TableEntry, stmt.name, stmt.primary_key)


def set_primary_key(
    catalog: Catalog, kind: type[StoredRelation], name: str, key: tuple[str, ...]
) -> Result:
    """Declare, replace or (with no columns) drop the key of a table or dynamic table: only the
    catalog changes, as nothing enforces the key."""
    other = catalog.find_relation(name)
    if isinstance(other, StoredRelation) and not isinstance(other, kind):
        words = other.CREATE.removeprefix("CREATE ")
        raise LakeError(f"{name} is a {other.LABEL}", f"alter its key with ALTER {words} {name}")
    entry = catalog.update(
        kind,
        name,
        lambda entry: replace(
            entry, primary_key=declared_key(f"{entry.LABEL} {name}", entry.columns, key)
        ),
    )
    if not key:
        return Result.status(f"{entry.LABEL} {name} has no primary key")
    return Result.status(f"{entry.LABEL} {name} has primary key ({', '.join(entry.primary_key)})")


def alter_clustering(session: Context, stmt: AlterTableClustering) -> Result:
    """Declare the columns OPTIMIZE lays the table's files out by, or none: Delta's own ALTER
    (a commit that changes no row), then the catalog."""
    catalog, name = session.catalog, stmt.name
    entry = table_named(
        catalog,
        name,
        "only a table's files are clustered with CLUSTER BY",
        lambda other: "cluster a table instead: ALTER TABLE t CLUSTER BY (col, …)",
    )
    columns = clustering_columns(f"table {name}", entry.columns, stmt.cluster_by)
    ensure_log_intact(entry)  # a layout change is a commit too
    layout = f"({_names(columns)})" if columns else "NONE"
    session.spark.sql(f"ALTER TABLE {delta_ref(entry.location)} CLUSTER BY {layout}")
    failpoints.reached(LAYOUT_COMMITTED)
    catalog.update(TableEntry, name, lambda entry: replace(entry, cluster_by=columns))
    newest = max(log_versions(entry.location) or [-1])
    if entry.version == newest - 1 and entry.row_count is not None:
        catalog.record_table_state(entry, newest, entry.row_count)  # no row changed
    if not columns:
        return Result.status(
            f"table {name} is not clustered: OPTIMIZE {name} only compacts its small files"
        )
    return Result.status(
        f"table {name} is clustered by ({', '.join(columns)}): OPTIMIZE {name} lays out by them "
        f"the files not yet clustered (writes alone do not), OPTIMIZE {name} FULL every file"
    )


def optimize(session: Context, stmt: Optimize) -> Result:
    """Lay a clustered table's files out by its clustering columns, or compact the small files
    of another (a dynamic table's too): one commit that changes no row, so that readers of the
    table's changes see none."""
    target = _stored_relation(session, stmt.name)  # before Spark: unknown names fail without a JVM
    if stmt.full and not _cluster_by(session.catalog, target):
        first = f" (or cluster it first: ALTER TABLE {target.name} CLUSTER BY (col, …))"
        raise LakeError(
            f"{target.LABEL} {target.name} is not clustered: OPTIMIZE … FULL lays out the files "
            "of a clustered table",
            f"compact its files with OPTIMIZE {target.name}"
            + (first if isinstance(target, TableEntry) else ""),
        )
    spark, catalog = session.spark, session.catalog
    full = " FULL" if stmt.full else ""

    def write(location: str, record: dict[str, Any]) -> None:
        with committing(spark, record):
            spark.sql(f"OPTIMIZE {delta_ref(location)}{full}").collect()

    def reading_no_stream(location: str, version: int, record: dict[str, Any]) -> nullcontext[None]:
        """OPTIMIZE reads no stream: its commit consumes none."""
        return nullcontext()

    return session.committing(
        stmt.name,
        lambda: commit_write(spark, catalog, target, "OPTIMIZE", reading_no_stream, write),
    )


def _stored_relation(session: Context, name: str) -> StoredRelation:
    """A table or dynamic table: a relation with columns and a Delta location of its own."""
    entry = session.catalog.relation(name)
    if isinstance(entry, TableEntry):
        return recorded_schema(session.catalog, entry)
    if not isinstance(entry, StoredRelation):
        words = entry.CREATE.removeprefix("CREATE ")
        raise LakeError(f"{name} is a {entry.LABEL}", f"describe it with DESC {words} {name}")
    return entry


def _cluster_by(catalog: Catalog, entry: StoredRelation) -> tuple[str, ...]:
    """The columns a relation's files are clustered by: only tables are clustered."""
    return clustered_by(catalog, entry) if isinstance(entry, TableEntry) else ()


def describe_table(session: Context, stmt: DescribeTable) -> Result:
    entry = _stored_relation(session, stmt.name)
    keyed = {name: position for position, name in enumerate(entry.primary_key, start=1)}
    layout = _cluster_by(session.catalog, entry)
    clustered = {name: position for position, name in enumerate(layout, start=1)}
    expected = entry.expectations if isinstance(entry, TableEntry) else ()
    return Result(
        ["column_name", "data_type", "comment", "primary_key", "cluster_by"],
        [
            (c.name, c.type, c.comment, keyed.get(c.name), clustered.get(c.name))
            for c in entry.columns
        ]
        # Its expectations after its columns, named as ALTER TABLE … DROP CONSTRAINT names them.
        + [(f"CONSTRAINT {e.name}", e.declaration(), None, None, None) for e in expected],
    )


def show_tables(session: Context, stmt: ShowTables) -> Result:
    return Result(
        [
            "name", "kind", "change_tracking", "schema_evolution", "rescued_data_column", "rows",
            "version", "comment", "created_at", "expectations",
        ],
        [
            (
                e.name, "TABLE", e.change_tracking, e.schema_evolution, e.rescued_data_column,
                e.row_count, e.version, e.comment, e.created_at,
                ", ".join(x.name for x in e.expectations) or None,
            )
            for e in session.catalog.entries(TableEntry)
        ],
    )  # fmt: skip


def describe_history(session: Context, stmt: DescribeHistory) -> Result:
    entry = _stored_relation(session, stmt.name)
    return Result(
        ["version", "timestamp", "operation", "rows_inserted", "rows_updated", "rows_deleted"],
        [
            (
                commit.version,
                commit.timestamp,
                commit.operation,
                *(row_changes(commit.operation or "", commit.operation_metrics) or (None,) * 3),
            )
            for commit in history(session.spark, entry.location)
        ],
    )
