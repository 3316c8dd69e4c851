"""The statements that manage changelog exports: CREATE (checking the source, the records'
table and the status table), SHOW, DESC and DROP; EXPORT CHANGELOG itself is in run.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import drop_object, name_taken
from lake_assets.core.results import Result
from lake_assets.exports import status
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.grammar import CreateExport
from lake_assets.exports.records import RECORD_NAMES, record_columns
from lake_assets.exports.scan import key_columns, source_of
from lake_assets.sql.statements import DescribeObject, DropObject
from lake_assets.tables.engine import create_table
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.grammar import CreateTable
from lake_assets.volumes.entry import VolumeEntry

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def _ensure_table(session: Context, name: str, columns: Iterable[Column], use: str) -> None:
    """Create table `name` with `columns`, or check that the one there has them."""
    wanted = [(c.name.lower(), c.type.lower()) for c in columns]
    existing = session.catalog.find_relation(name)
    if existing is None:
        create_table(session, CreateTable(name, tuple(columns), f"{use}, written by lake"))
        return
    shape = [(c.name.lower(), c.type.lower()) for c in getattr(existing, "columns", ())]
    if not isinstance(existing, TableEntry) or shape != wanted:
        raise LakeError(
            f"{existing.LABEL} {name} cannot hold the {use}: it needs the columns "
            + ", ".join(f"{n} {t.upper()}" for n, t in wanted),
            "name another table, or drop this one",
        )


def create_export(session: Context, stmt: CreateExport) -> Result:
    catalog = session.catalog
    if taken := name_taken(session, ExportEntry, stmt.name, stmt.if_not_exists):
        return taken
    source = source_of(catalog, stmt.source)
    keys, _ = key_columns(source, source.primary_key)
    clashing = [column.name for column in keys if column.name.lower() in RECORD_NAMES]
    if clashing:
        raise LakeError(
            f"changelog export {stmt.name}: key column {clashing[0]} of {source.name} has the name "
            "of a record column, which its records could not hold beside it",
            f"export a table whose key columns are not named {', '.join(RECORD_NAMES)}",
        )
    if stmt.to_volume is not None:
        catalog.get(VolumeEntry, stmt.to_volume)
    if stmt.to_table is not None:
        writer = next(
            (e.name for e in catalog.entries(ExportEntry) if e.to_table == stmt.to_table), None
        )
        if writer is not None or stmt.to_table in (stmt.source, stmt.status_table):
            raise LakeError(
                f"table {stmt.to_table} cannot take export {stmt.name}'s records: "
                + (f"changelog export {writer} writes it" if writer else "the export reads it"),
                "give each export a table of its own",
            )
        columns = record_columns(keys, stmt.sequence_info)
        _ensure_table(session, stmt.to_table, columns, f"records of changelog export {stmt.name}")
    _ensure_table(session, stmt.status_table, status.COLUMNS, "status of changelog exports")
    catalog.add(
        ExportEntry(
            stmt.name,
            source=source.name,
            key=tuple(column.name for column in keys),
            to_table=stmt.to_table,
            to_volume=stmt.to_volume,
            subdirectory=stmt.subdirectory,
            file_format=stmt.file_format,
            status_table=stmt.status_table,
            sequence_info=stmt.sequence_info,
            max_retries=stmt.max_retries,
            comment=stmt.comment,
        )
    )
    return Result.status(f"created changelog export {stmt.name}")


def show_exports(session: Context) -> Result:
    return Result(
        ["name", "source", "target", "status_table", "sequence_info", "comment", "created_at"],
        [
            (e.name, e.source, e.target, e.status_table, e.sequence_info, e.comment, e.created_at)
            for e in session.catalog.entries(ExportEntry)
        ],
    )


def describe_export(session: Context, stmt: DescribeObject) -> Result:
    export = session.catalog.get(ExportEntry, stmt.name)
    rows = [
        ("name", export.name),
        ("source", export.source),
        ("primary_key", ", ".join(export.key)),
        ("target", export.target),
        ("file_format", export.file_format if export.to_volume else None),
        ("status_table", export.status_table),
        ("export_sequence_info", str(export.sequence_info).upper()),
        ("max_retries", str(export.max_retries)),
        ("comment", export.comment),
        ("created_at", export.created_at),
    ]
    return Result(["property", "value"], rows)


def drop_export(session: Context, stmt: DropObject) -> Result:
    """DROP CHANGELOG EXPORT; its rows leave the status table, so a new export of the name
    starts afresh. Its records stay where they were written."""

    def forget(export: ExportEntry) -> None:
        table = session.catalog.find(TableEntry, export.status_table)
        if table is not None:
            session.committing(
                table.name,
                lambda: status.forget(session.spark, session.catalog, table, export.name),
            )

    return drop_object(ExportEntry, forget)(session, stmt)
