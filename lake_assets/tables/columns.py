"""ALTER TABLE … ADD | RENAME | DROP | ALTER COLUMN: Delta's own ALTER (column mapping or type
widening turned on first, by a commit of its own), then the catalog's record. The ALTER's commit
carries the columns it leaves, so a crash between the two is made good from the log: whoever
next reads the table's schema through `recorded_schema` records them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import committing, find, new_record
from lake_assets.core.delta import (
    delta_ref,
    latest_version,
    sql_string,
    table_properties,
)
from lake_assets.core.entries import CatalogObject, Column, StoredRelation
from lake_assets.core.errors import LakeError
from lake_assets.core.log_check import ensure_log_intact, newest_unrecorded
from lake_assets.core.results import Result
from lake_assets.tables.alterations import AlterTableColumns
from lake_assets.tables.entry import TableEntry, table_named
from lake_assets.tables.expectations import expectations_naming
from lake_assets.tables.schema_changes import RenameColumn, SchemaChange

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# The kind of record a schema change's commit carries.
SCHEMA_MARKER = "lake_schema"
# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
SCHEMA_COMMITTED = "table.schema.committed"


def alter_columns(session: Context, stmt: AlterTableColumns) -> Result:
    catalog, name, change = session.catalog, stmt.name, stmt.change
    entry = table_named(
        catalog,
        name,
        "only a table's columns change with ALTER TABLE",
        lambda other: (
            f"change a {other.LABEL}'s columns through its own statement ({other.CREATE} …)"
        ),
    )
    entry = recorded_schema(catalog, entry)
    columns = change.apply(name, entry.columns)  # before Spark: bad changes fail without a JVM
    check_readers(catalog, entry, change)
    renamed = change.renamed()
    schema = schema_record(
        columns,
        tuple(renamed.get(c.lower(), c) for c in entry.primary_key),
        tuple(renamed.get(c.lower(), c) for c in entry.cluster_by),
        change.describe(),
    )
    record = new_record(SCHEMA_MARKER, schema=schema)
    return session.committing(name, lambda: _commit(session, entry, change, record))


def schema_record(
    columns: Sequence[Column], key: Sequence[str], cluster_by: Sequence[str], change: str
) -> dict[str, Any]:
    """What a commit that changes a table's columns carries in its record, under "schema": the
    columns it leaves (and the key and layout, renamed with them), and the change in words."""
    return {
        "columns": [asdict(column) for column in columns],
        "primary_key": list(key),
        "cluster_by": list(cluster_by),
        "change": change,
    }


def _commit(
    session: Context, entry: TableEntry, change: SchemaChange, record: dict[str, Any]
) -> Result:
    spark, location = session.spark, entry.location
    ensure_log_intact(entry)  # a schema change is a commit too
    before = latest_version(spark, location)
    feature = change.feature()
    if feature is not None and table_properties(spark, location).get(feature) != (
        feature.turned_on
    ):
        setting = f"{sql_string(feature)} = {sql_string(feature.turned_on)}"
        spark.sql(f"ALTER TABLE {delta_ref(location)} SET TBLPROPERTIES ({setting})")
    with committing(spark, record):
        spark.sql(f"ALTER TABLE {delta_ref(location)} {change.delta_clause()}")
    failpoints.reached(SCHEMA_COMMITTED)
    commit = find(spark, location, record, after=before)
    assert commit is not None  # Delta's ALTER raises when it does not commit
    updated = record_schema(session.catalog, entry, record["schema"], commit.version)
    if before == entry.version and entry.row_count is not None:
        session.catalog.record_table_state(updated, commit.version, entry.row_count)
    return Result.status(f"table {entry.name}: {change.describe()} (version {commit.version})")


def check_readers(catalog: Catalog, entry: TableEntry, change: SchemaChange) -> None:
    """Refuse, in one line, to take away a column the table's key, layout or readers name, or
    to change its columns under a reader of its changes."""
    gone = {column.lower() for column in change.removes()}
    if gone:
        _check_layout(entry, gone, change)
        _check_expectations(entry, gone, change)
        _check_column_readers(catalog, entry, gone, change)
    if change.breaks_change_readers:
        for user in _every_object(catalog):
            if user.reads_changes(entry.name):
                raise LakeError(
                    f"{user.LABEL} {user.name} reads table {entry.name}'s changes, which cannot "
                    f"be read across this change ({change.describe()})",
                    f"drop {user.LABEL} {user.name} first (its changes read to the end), and "
                    "create it again after the change",
                )


def _check_layout(entry: TableEntry, gone: set[str], change: SchemaChange) -> None:
    """A key or clustering column is renamed with them, never dropped from under them; the
    rescued-data column stays what its property names."""
    rescued = entry.rescued_data_column
    if rescued is not None and rescued.lower() in gone:
        raise LakeError(
            f"column {rescued} keeps table {entry.name}'s rescued data",
            f"first ALTER TABLE {entry.name} SET PROPERTIES ('rescued_data_column' = '')",
        )
    if isinstance(change, RenameColumn):
        return
    for what, names in (("primary key", entry.primary_key), ("clustering", entry.cluster_by)):
        hit = [column for column in names if column.lower() in gone]
        if hit:
            undo = "DROP PRIMARY KEY" if what == "primary key" else "CLUSTER BY (…) without it"
            raise LakeError(
                f"column {hit[0]} is in table {entry.name}'s {what}: it cannot be dropped",
                f"first ALTER TABLE {entry.name} {undo}",
            )


def _check_expectations(entry: TableEntry, gone: set[str], change: SchemaChange) -> None:
    """An expectation's condition names its columns as they were declared."""
    done = "renamed" if isinstance(change, RenameColumn) else "dropped"
    for column in sorted(gone):
        named = expectations_naming(entry.expectations, column)
        if named:
            raise LakeError(
                f"expectation {named[0].name} of table {entry.name} reads column {column}: it "
                f"cannot be {done} under it",
                f"first ALTER TABLE {entry.name} DROP CONSTRAINT {named[0].name}",
            )


def _check_column_readers(
    catalog: Catalog, entry: TableEntry, gone: set[str], change: SchemaChange
) -> None:
    def columns_of(relation: str) -> list[str]:
        found = catalog.find_relation(relation)
        return [c.name for c in found.columns] if isinstance(found, StoredRelation) else []

    done = "renamed" if isinstance(change, RenameColumn) else "dropped"
    for user in catalog.users(TableEntry, entry.name):
        hit = sorted(gone & user.columns_read(entry.name, columns_of))
        if hit:
            raise LakeError(
                f"{user.LABEL} {user.name} reads column {hit[0]} of table {entry.name}: "
                f"it cannot be {done} under it",
                f"first change or drop {user.LABEL} {user.name} so that it no longer reads "
                f"{hit[0]}",
            )


def _every_object(catalog: Catalog) -> Iterator[CatalogObject]:
    for kind in CatalogObject.KINDS.values():
        yield from catalog.entries(kind)


def recorded_schema(catalog: Catalog, entry: TableEntry) -> TableEntry:
    """The table as its newest schema change left it: a change committed after the catalog's
    recorded version (the catalog's record was cut off) is recorded now, read without Spark."""
    found = newest_unrecorded(entry.location, entry.version, _schema_of)
    if found is None or (entry.schema_version or -1) >= found[0]:
        return entry
    version, schema = found
    return record_schema(catalog, entry, schema, version)


def _schema_of(action: dict[str, Any]) -> dict[str, Any] | None:
    """The schema record a commit's record carries (an ALTER's, or a load's that added columns),
    whoever wrote it (our records are JSON)."""
    user_metadata = (action.get("commitInfo") or {}).get("userMetadata")
    if not user_metadata or not user_metadata.startswith('{"lake_'):
        return None
    try:
        schema = json.loads(user_metadata).get("schema")
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def record_schema(
    catalog: Catalog, entry: TableEntry, schema: dict[str, Any], version: int
) -> TableEntry:
    """The catalog's entry as the schema record of the commit at `version` leaves it."""

    def changed(found: TableEntry) -> TableEntry:
        return replace(
            found,
            columns=tuple(Column(**column) for column in schema["columns"]),
            primary_key=tuple(schema["primary_key"]),
            cluster_by=tuple(schema["cluster_by"]),
            schema_version=version,
            schema_change=schema["change"],
        )

    return catalog.update(TableEntry, entry.name, changed)
