"""The seed's non-SQL relations inside queries — VOLUME …, DIRECTORY(VOLUME …), load_history(…) —
are cut out and replaced by placeholder names that the engine turns into temporary views."""

from __future__ import annotations

from sqlglot.tokens import TokenType

from lake_assets.sql.binding import SOURCE_PREFIX
from lake_assets.sql.statements import (
    DirectorySource,
    LoadHistorySource,
    Source,
    VolumeSource,
)
from lake_assets.sql.tokens import TokenCursor, tokenize
from lake_assets.sql.types import parse_column_type
from resources.catalog import Column

PLACEHOLDER = SOURCE_PREFIX + "{}"
FORMATS = ("CSV", "PARQUET", "JSON")
VOLUME_SOURCE = (
    "VOLUME v [(col TYPE, …)] USING CSV|PARQUET|JSON [OPTIONS('k' = 'v', …)] "
    "[FILES('a.csv', …)] [SUBDIRECTORY 'dir/']"
)


def parse_volume_source(cursor: TokenCursor) -> VolumeSource:
    """Read `VOLUME v …` up to the last clause it owns; the cursor stops after it."""
    usage, cursor.usage = cursor.usage, VOLUME_SOURCE
    cursor.expect("VOLUME")
    volume = cursor.name("a volume name")
    columns = None
    if cursor.accept_symbol(TokenType.L_PAREN):
        columns = [_column(cursor)]
        while cursor.accept_symbol(TokenType.COMMA):
            columns.append(_column(cursor))
        cursor.expect_symbol(TokenType.R_PAREN, ")")
    cursor.expect("USING")
    file_format = cursor.word()
    if file_format not in FORMATS:
        cursor.fail("CSV, PARQUET or JSON")
    cursor.position += 1
    options: dict[str, str] = {}
    files = None
    subdirectory = None
    while True:
        if cursor.accept("OPTIONS"):
            options.update(cursor.properties())
        elif cursor.accept("FILES"):
            files = cursor.strings("a file path")
        elif cursor.accept("SUBDIRECTORY"):
            subdirectory = cursor.string("a subdirectory")
        else:
            break
    cursor.usage = usage
    return VolumeSource(
        volume, file_format, tuple(columns) if columns else None, options, files, subdirectory
    )


def _column(cursor: TokenCursor) -> Column:
    name = cursor.identifier("a column name")
    return Column(name, parse_column_type(cursor, name))


def extract_sources(text: str) -> tuple[str, dict[str, Source]]:
    """The query text with special relations replaced by placeholders, and what they stand for."""
    tokens = tokenize(text)
    cursor = TokenCursor(tokens)
    pieces: list[str] = []
    sources: dict[str, Source] = {}
    copied = 0
    while not cursor.at_end():
        start_token = cursor.peek()
        previous = cursor.word(-1) if cursor.position else ""
        source = _special_source(cursor, previous)
        if source is None:
            cursor.position += 1
            continue
        placeholder = PLACEHOLDER.format(len(sources))
        sources[placeholder] = source
        end = tokens[cursor.position - 1].end + 1
        pieces.append(text[copied : start_token.start] + placeholder)
        copied = end
    pieces.append(text[copied:])
    return "".join(pieces), sources


def _special_source(cursor: TokenCursor, previous: str) -> Source | None:
    word = cursor.word()
    opens = cursor.peek(1) is not None and cursor.peek(1).token_type == TokenType.L_PAREN
    if word == "VOLUME" and previous in ("FROM", "JOIN", ","):
        return parse_volume_source(cursor)
    if word == "DIRECTORY" and opens:
        cursor.position += 2
        cursor.usage = "DIRECTORY(VOLUME v)"
        cursor.expect("VOLUME")
        source: Source = DirectorySource(cursor.name("a volume name"))
        cursor.expect_symbol(TokenType.R_PAREN, ")")
        return source
    if word == "LOAD_HISTORY" and opens:
        cursor.position += 2
        cursor.usage = "load_history('table')"
        source = LoadHistorySource(cursor.string("a quoted table name").lower())
        cursor.expect_symbol(TokenType.R_PAREN, ")")
        return source
    return None
