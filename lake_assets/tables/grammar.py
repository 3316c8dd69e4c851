"""CREATE / DROP / ALTER TABLE, DESC [TABLE], DESC HISTORY and SHOW TABLES."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import TokenType

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.sql.grammar import Grammar, StatementParser, finished, unsupported
from lake_assets.sql.statements import Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.sql.types import parse_column_type

CREATE_TABLE = "CREATE TABLE [IF NOT EXISTS] name (col TYPE [COMMENT '…'], …) [COMMENT '…']"
DROP_TABLE = "DROP TABLE [IF EXISTS] name"
ALTER_TABLE = "ALTER TABLE name SET PROPERTIES ('change_tracking' = 'true')"
DESCRIBE = "DESC [TABLE] name | DESC HISTORY name"


@dataclass(frozen=True)
class CreateTable(Statement):
    name: str
    columns: tuple[Column, ...]
    comment: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropTable(Statement):
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class AlterTableProperties(Statement):
    name: str
    properties: dict[str, str]


@dataclass(frozen=True)
class DescribeTable(Statement):
    name: str


@dataclass(frozen=True)
class DescribeHistory(Statement):
    name: str


@dataclass(frozen=True)
class ShowTables(Statement):
    pass


def parse_create_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_TABLE
    cursor.expect("CREATE", "TABLE")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a table name")
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    columns = [_parse_column(cursor)]
    while cursor.accept_symbol(TokenType.COMMA):
        columns.append(_parse_column(cursor))
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
    cursor.expect_end()
    names = [column.name.lower() for column in columns]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise LakeError(
            f"column {duplicates[0]} appears twice in table {name}",
            "give every column a distinct name",
        )
    return CreateTable(name, tuple(columns), comment, if_not_exists)


def _parse_column(cursor: TokenCursor) -> Column:
    name = cursor.identifier("a column name")
    column_type = parse_column_type(cursor, name)
    comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
    return Column(name, column_type, comment)


def parse_drop_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = DROP_TABLE
    cursor.expect("DROP", "TABLE")
    if_exists = cursor.accept("IF", "EXISTS")
    return finished(cursor, DropTable(cursor.name("a table name"), if_exists))


def parse_alter_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = ALTER_TABLE
    cursor.expect("ALTER", "TABLE")
    name = cursor.name("a table name")
    if not cursor.accept("SET", "PROPERTIES"):
        raise unsupported(cursor.tokens)
    return finished(cursor, AlterTableProperties(name, cursor.properties()))


def parse_describe(cursor: TokenCursor, grammar: Grammar) -> Statement:
    """DESC without a kind's word: a table (or dynamic table), or the history of one."""
    cursor.usage = DESCRIBE
    cursor.position += 1
    if cursor.word() == "HISTORY" and cursor.peek(1) is not None:
        cursor.position += 1
        return finished(cursor, DescribeHistory(cursor.name("a table name")))
    cursor.accept("TABLE")
    cursor.accept("EXTENDED")
    return finished(cursor, DescribeTable(cursor.name("a table name")))


def parse_show_tables(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = "SHOW TABLES"
    cursor.expect("SHOW", "TABLES")
    return finished(cursor, ShowTables())


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "TABLE"): parse_create_table,
    ("DROP", "TABLE"): parse_drop_table,
    ("ALTER", "TABLE"): parse_alter_table,
    ("DESC",): parse_describe,
    ("DESCRIBE",): parse_describe,
    ("SHOW", "TABLES"): parse_show_tables,
}
