"""COPY INTO a table from a volume: the statement and its options, written after its source in any
order, as a COPY and a pipe's COPY take them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from sqlglot.tokens import TokenType

from lake_assets.pipes.copy_options import (
    ON_ERROR_USAGE,
    SKIP_FILE,
    VALIDATION_USAGE,
    ColumnMatch,
    OnError,
    Validation,
    check_matching,
    parse_column_match,
    parse_on_error,
    parse_validation,
)
from lake_assets.pipes.file_formats import (
    CopySource,
    FormatOptions,
    copy_source,
    datetime_format,
    java_charset,
)
from lake_assets.sql.statements import Statement
from lake_assets.sql.tokens import TokenCursor, tokenize
from lake_assets.volumes.grammar import parse_volume_source

COPY_INTO_TABLE = (
    "COPY INTO t FROM VOLUME v [(col TYPE, …)] USING CSV|PARQUET|JSON [OPTIONS(…)] "
    "[FILES(…)] [SUBDIRECTORY '…'] [ON_ERROR = …] [VALIDATION_MODE = …] "
    "[MATCH_BY_COLUMN_NAME = …] [NULL_IF = ('…', …)] [DATE_FORMAT = '…'] "
    "[TIMESTAMP_FORMAT = '…'] [ENCODING = '…'] [PURGE = TRUE] [FORCE = TRUE] "
    "[RELOAD_CHANGED = TRUE]"
)


@dataclass(frozen=True)
class CopyIntoTable(Statement):
    table: str
    # The volume source with the COPY's format options (CopySource.formats), which its reads take.
    source: CopySource
    purge: bool = False
    force: bool = False
    # A loaded file that changed since is loaded again (its whole new content), not skipped.
    reload_changed: bool = False
    on_error: OnError = SKIP_FILE
    validation: Validation | None = None
    match_by_name: ColumnMatch = ColumnMatch.NONE


def flag(cursor: TokenCursor, what: str) -> bool:
    cursor.expect_symbol(TokenType.EQ, "=")
    return cursor.boolean(what)


@functools.cache
def copy_of(text: str) -> CopyIntoTable:
    """A COPY INTO statement's text (as a pipe keeps it) parsed once per process."""
    cursor = TokenCursor(tokenize(text), text=text)
    cursor.expect("COPY", "INTO")
    return parse_copy_into_table(cursor)


def parse_copy_into_table(cursor: TokenCursor) -> CopyIntoTable:
    """After `COPY INTO`: the table, its volume source and the COPY's options."""
    cursor.usage = COPY_INTO_TABLE
    table = cursor.name("a table name")
    cursor.expect("FROM")
    source = parse_volume_source(cursor)
    cursor.usage = COPY_INTO_TABLE
    purge = force = reload_changed = False
    on_error, validation, match, formats = SKIP_FILE, None, ColumnMatch.NONE, FormatOptions()
    while not cursor.at_end():
        if cursor.accept("ON_ERROR"):
            cursor.expect_symbol(TokenType.EQ, "=")
            on_error = parse_on_error(cursor.setting(ON_ERROR_USAGE))
        elif cursor.accept("VALIDATION_MODE"):
            cursor.expect_symbol(TokenType.EQ, "=")
            validation = parse_validation(cursor.setting(VALIDATION_USAGE))
        elif cursor.accept("MATCH_BY_COLUMN_NAME"):
            cursor.expect_symbol(TokenType.EQ, "=")
            match = parse_column_match(cursor.setting("CASE_SENSITIVE or CASE_INSENSITIVE"))
        elif cursor.accept("NULL_IF"):
            cursor.expect_symbol(TokenType.EQ, "=")
            formats = replace(formats, null_if=null_strings(cursor))
        elif cursor.accept("DATE_FORMAT"):
            cursor.expect_symbol(TokenType.EQ, "=")
            text = cursor.string("a quoted date format")
            formats = replace(formats, date_format=datetime_format("DATE_FORMAT", text))
        elif cursor.accept("TIMESTAMP_FORMAT"):
            cursor.expect_symbol(TokenType.EQ, "=")
            text = cursor.string("a quoted timestamp format")
            formats = replace(formats, timestamp_format=datetime_format("TIMESTAMP_FORMAT", text))
        elif cursor.accept("ENCODING"):
            cursor.expect_symbol(TokenType.EQ, "=")
            formats = replace(formats, encoding=java_charset(cursor.setting("an encoding")))
        elif cursor.accept("PURGE"):
            purge = flag(cursor, "PURGE")
        elif cursor.accept("FORCE"):
            force = flag(cursor, "FORCE")
        elif cursor.accept("RELOAD_CHANGED"):
            reload_changed = flag(cursor, "RELOAD_CHANGED")
        else:
            break
    check_matching(source, match)
    copied = copy_source(source, formats)
    return CopyIntoTable(table, copied, purge, force, reload_changed, on_error, validation, match)


def null_strings(cursor: TokenCursor) -> tuple[str, ...]:
    """`('a', 'b', …)`, or `()` for none, as Snowflake's NULL_IF takes them."""
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    if cursor.accept_symbol(TokenType.R_PAREN):
        return ()
    values = [cursor.string("a quoted string that means NULL")]
    while cursor.accept_symbol(TokenType.COMMA):
        values.append(cursor.string("a quoted string that means NULL"))
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return tuple(values)
