"""RESTORE TABLE t TO VERSION n | TIMESTAMP '…': Delta's own RESTORE, one commit that brings back
the rows of that version, which the table's dynamic tables and streams read as deletes and
inserts. When that version's columns differ from today's, the commit carries them as a schema
change does, and is refused where such a change would be (see columns.check_readers)."""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from lake_assets.core.commits import committing
from lake_assets.core.delta import delta_ref, history
from lake_assets.core.entries import Column
from lake_assets.core.results import Result
from lake_assets.core.versions import version_at
from lake_assets.core.writes import commit_write
from lake_assets.sql.types import type_text
from lake_assets.tables.columns import check_readers, record_schema, recorded_schema, schema_record
from lake_assets.tables.entry import TableEntry, table_named
from lake_assets.tables.grammar import RestoreTable
from lake_assets.tables.schema_changes import RestoreColumns

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

_OPERATION = "RESTORE"


def restore_table(session: Context, stmt: RestoreTable) -> Result:
    catalog, name = session.catalog, stmt.name
    entry = table_named(
        catalog,
        name,
        "only a table is restored",
        lambda other: f"restore the table the {other.LABEL} is made from instead",
    )
    entry = recorded_schema(catalog, entry)
    spark = session.spark
    commits = history(spark, entry.location)
    newest = "leave the table as it is to keep its newest version"
    version = version_at(stmt.to, commits, f"table {name}", newest)
    if version == commits[0].version:
        return Result.status(f"table {name} is at version {version} already: nothing to restore")
    change = _columns_restored(spark, entry, version)
    schema = None
    if change is not None:
        check_readers(catalog, entry, change)
        key, layout = entry.primary_key, entry.cluster_by
        schema = schema_record(change.restored, key, layout, change.describe())

    def write(location: str, record: dict[str, Any]) -> None:
        carried = {**record, "restored": version, **({"schema": schema} if schema else {})}
        with committing(spark, carried):
            spark.sql(f"RESTORE TABLE {delta_ref(location)} TO VERSION AS OF {int(version)}")

    def restored() -> Result:
        commit_write(spark, catalog, entry, _OPERATION, _reads_no_stream, write)
        now = catalog.get(TableEntry, name)
        if schema is not None:
            record_schema(catalog, now, schema, now.version or 0)
        return Result.status(
            f"restored table {name} to version {version}: it is at version {now.version} with "
            f"{now.row_count} rows" + (f"; {change.describe()}" if change is not None else "")
        )

    return session.committing(name, restored)


def _reads_no_stream(location: str, version: int, record: dict[str, Any]) -> nullcontext[None]:
    return nullcontext()


def _columns_restored(
    spark: SparkSession, entry: TableEntry, version: int
) -> RestoreColumns | None:
    """The change of columns restoring `version` makes, or None when its columns are today's;
    a column it shares with today keeps the catalog's spelling of its type and its comment."""
    then = spark.read.format("delta").option("versionAsOf", version).load(entry.location).schema
    now = spark.read.format("delta").load(entry.location).schema
    if then == now:
        return None
    same = {f.name.lower(): f.dataType for f in now.fields}
    kept = {c.name.lower(): c for c in entry.columns}
    restored = tuple(
        kept[f.name.lower()]
        if same.get(f.name.lower()) == f.dataType and f.name.lower() in kept
        else Column(f.name, type_text(f.dataType), f.metadata.get("comment"))
        for f in then.fields
    )
    names = {c.name.lower() for c in restored}
    removed = tuple(c.name for c in entry.columns if c.name.lower() not in names)
    return RestoreColumns("", restored=restored, removed=removed, version=version)
