"""CREATE [OR REPLACE] [TABLE] STREAM on a table, a dynamic table or a volume, and ALTER STREAM
… SET OFFSET; SHOW, DESC and DROP take the forms every kind shares (`SHOW [TABLE] STREAMS`,
`DESC STREAM s`, `DROP [TABLE] STREAM s`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.core.versions import LATEST, Position
from lake_assets.sql.grammar import Grammar, ObjectWords, StatementParser, finished
from lake_assets.sql.statements import Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.streams.entry import StreamMode

CREATE_STREAM = (
    "CREATE [OR REPLACE] [TABLE] STREAM [IF NOT EXISTS] name ON TABLE t | ON DYNAMIC TABLE d "
    "| ON VOLUME v "
    "[AT (VERSION => n) | AT (TIMESTAMP => '…')] [WITH PROPERTIES ('TABLE_STREAM_MODE' = "
    "'STANDARD' | 'APPEND_ONLY', 'SHOW_INITIAL_ROWS' = 'TRUE' | 'FALSE')] [COMMENT '…']"
)
ALTER_STREAM = (
    "ALTER STREAM name SET OFFSET (VERSION => n) | SET OFFSET (TIMESTAMP => '…') "
    "| SET OFFSET LATEST"
)
WORDS = ObjectWords("stream", (("STREAM",), ("TABLE", "STREAM")))
SOURCE_KINDS = {
    ("TABLE",): "table",
    ("DYNAMIC", "TABLE"): "dynamic_table",
    ("VOLUME",): "volume",
}
_PROPERTIES = ("table_stream_mode", "show_initial_rows")


@dataclass(frozen=True)
class CreateStream(Statement):
    name: str
    source: str
    source_kind: str
    at: Position = LATEST
    mode: StreamMode = StreamMode.STANDARD
    show_initial_rows: bool = False
    comment: str | None = None
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterStreamOffset(Statement):
    name: str
    to: Position


def parse_create_stream(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_STREAM
    cursor.expect("CREATE")
    or_replace = cursor.accept("OR", "REPLACE")
    cursor.accept("TABLE")
    cursor.expect("STREAM")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    if or_replace and if_not_exists:
        raise LakeError("OR REPLACE and IF NOT EXISTS cannot be used together", "keep one of them")
    name = cursor.name("a stream name")
    cursor.expect("ON")
    source_kind = _source_kind(cursor)
    source = cursor.name(f"the name of the {source_kind.replace('_', ' ')} the stream reads")
    at = _position(cursor) if cursor.accept("AT") else LATEST
    properties = _properties(cursor) if cursor.accept("WITH", "PROPERTIES") else {}
    comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
    return finished(
        cursor,
        CreateStream(
            name,
            source,
            source_kind,
            at,
            _mode(properties.get("table_stream_mode", StreamMode.STANDARD)),
            _flag(properties.get("show_initial_rows", "FALSE")),
            comment,
            or_replace,
            if_not_exists,
        ),
    )


def _source_kind(cursor: TokenCursor) -> str:
    for words, kind in sorted(SOURCE_KINDS.items(), key=lambda item: -len(item[0])):
        if cursor.accept(*words):
            return kind
    cursor.fail("TABLE, DYNAMIC TABLE or VOLUME")


def _position(cursor: TokenCursor) -> Position:
    """`(VERSION => n)` or `(TIMESTAMP => '…')`."""
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    if cursor.accept("VERSION"):
        cursor.expect_symbol(TokenType.FARROW, "=>")
        position = Position(version=cursor.integer("a version number"))
    elif cursor.accept("TIMESTAMP"):
        cursor.expect_symbol(TokenType.FARROW, "=>")
        position = Position(timestamp=cursor.string("a quoted timestamp"))
    else:
        cursor.fail("VERSION => n or TIMESTAMP => '…'")
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return position


def _properties(cursor: TokenCursor) -> dict[str, str]:
    properties = cursor.properties()
    unknown = sorted(set(properties) - set(_PROPERTIES))
    if unknown:
        raise LakeError(
            f"unknown stream property '{unknown[0]}'",
            f"use {' or '.join(p.upper() for p in _PROPERTIES)}",
        )
    return properties


def _mode(value: str) -> StreamMode:
    try:
        return StreamMode(value.upper())
    except ValueError:
        raise LakeError(
            f"unknown TABLE_STREAM_MODE '{value}'",
            f"use {' or '.join(repr(mode.value) for mode in StreamMode)}",
        ) from None


def _flag(value: str) -> bool:
    if value.upper() not in ("TRUE", "FALSE"):
        raise LakeError(
            f"SHOW_INITIAL_ROWS must be 'TRUE' or 'FALSE', not '{value}'", "fix the value"
        )
    return value.upper() == "TRUE"


def parse_alter_stream(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = ALTER_STREAM
    cursor.expect("ALTER", "STREAM")
    name = cursor.name("a stream name")
    cursor.expect("SET", "OFFSET")
    to = LATEST if cursor.accept("LATEST") else _position(cursor)
    return finished(cursor, AlterStreamOffset(name, to))


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "STREAM"): parse_create_stream,
    ("CREATE", "TABLE", "STREAM"): parse_create_stream,
    ("CREATE", "OR", "REPLACE", "STREAM"): parse_create_stream,
    ("CREATE", "OR", "REPLACE", "TABLE", "STREAM"): parse_create_stream,
    ("ALTER", "STREAM"): parse_alter_stream,
}
