"""What follows `ALTER TABLE t` when it changes the table's columns or its name: each change is
a statement of its own, as its handler and its effect downstream differ."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.sql.statements import Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.sql.types import parse_column_type
from lake_assets.tables.entry import PRIMARY_KEY
from lake_assets.tables.schema_changes import (
    AddColumn,
    AlterColumnType,
    DropColumn,
    RenameColumn,
    SchemaChange,
)


@dataclass(frozen=True)
class AlterTableColumns(Statement):
    """`ALTER TABLE t ADD | RENAME | DROP | ALTER COLUMN …`: one change of the table's columns."""

    name: str
    change: SchemaChange


@dataclass(frozen=True)
class RenameTable(Statement):
    """`ALTER TABLE t RENAME TO u`: the same Delta table, its history and streams, under `u`."""

    name: str
    new_name: str


def parse_column(cursor: TokenCursor) -> tuple[Column, bool]:
    """A column, and whether it is declared the key by itself (`id INT PRIMARY KEY`)."""
    name = cursor.identifier("a column name")
    column_type = parse_column_type(cursor, name)
    keyed = cursor.accept(PRIMARY_KEY.clause)
    comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
    return Column(name, column_type, comment), keyed


def _add_column(cursor: TokenCursor, name: str) -> Statement:
    cursor.accept("COLUMN")
    column, keyed = parse_column(cursor)
    if keyed:
        raise LakeError(
            f"new column {column.name} cannot be the key as it is added: its rows hold NULL",
            f"add it, fill it, then ALTER TABLE {name} SET PRIMARY KEY (…)",
        )
    return AlterTableColumns(name, AddColumn(column.name, column.type, column.comment))


def _rename_column(cursor: TokenCursor, name: str) -> Statement:
    old = cursor.identifier("the column to rename")
    cursor.expect("TO")
    return AlterTableColumns(name, RenameColumn(old, cursor.identifier("the new column name")))


def _drop_column(cursor: TokenCursor, name: str) -> Statement:
    return AlterTableColumns(name, DropColumn(cursor.identifier("the column to drop")))


def _alter_column(cursor: TokenCursor, name: str) -> Statement:
    cursor.accept("COLUMN")
    column = cursor.identifier("the column to change")
    cursor.accept("SET", "DATA")
    cursor.expect("TYPE")
    return AlterTableColumns(name, AlterColumnType(column, parse_column_type(cursor, column)))


def _rename_table(cursor: TokenCursor, name: str) -> Statement:
    return RenameTable(name, cursor.name("the table's new name"))


# Keyed by the words that start each change; RENAME COLUMN is tried before RENAME TO.
ALTERATIONS: dict[tuple[str, ...], Callable[[TokenCursor, str], Statement]] = {
    ("ADD",): _add_column,
    ("RENAME", "COLUMN"): _rename_column,
    ("RENAME", "TO"): _rename_table,
    ("DROP", "COLUMN"): _drop_column,
    ("ALTER",): _alter_column,
}
