"""The dialect's non-SQL relations inside queries (VOLUME …, DIRECTORY(VOLUME …), load_history(…))
are cut out and replaced by placeholder names that the session turns into temporary views. Each
kind names the words that start its relations; this module only walks the text."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot.tokens import TokenType

from lake_assets.sql.binding import SOURCE_PREFIX
from lake_assets.sql.statements import Source
from lake_assets.sql.tokens import TokenCursor, tokenize

PLACEHOLDER = SOURCE_PREFIX + "{}"


def extract_sources(
    text: str, parsers: Mapping[str, Callable[[TokenCursor, str], Source | None]]
) -> tuple[str, dict[str, Source]]:
    """The query text with special relations replaced by placeholders, and what they stand for."""
    tokens = tokenize(text)
    cursor = TokenCursor(tokens, text=text)
    pieces: list[str] = []
    sources: dict[str, Source] = {}
    copied = 0
    while not cursor.at_end():
        start_token = tokens[cursor.position]
        previous = cursor.word(-1) if cursor.position else ""
        parse = parsers.get(cursor.word())
        source = parse(cursor, previous) if parse is not None else None
        if source is None:
            cursor.position += 1
            continue
        placeholder = PLACEHOLDER.format(len(sources))
        sources[placeholder] = source
        pieces.append(text[copied : start_token.start] + placeholder)
        copied = tokens[cursor.position - 1].end + 1
    pieces.append(text[copied:])
    return "".join(pieces), sources


def opens_call(cursor: TokenCursor) -> bool:
    """Whether the word at the cursor is followed by '(' — a table function such as DIRECTORY(…)."""
    following = cursor.peek(1)
    return following is not None and following.token_type == TokenType.L_PAREN


def table_relation(
    kind: Callable[[str], Source], usage: str
) -> Callable[[TokenCursor, str], Source | None]:
    """A relation written as a call with one quoted table name: `load_history('t')`."""

    def parse(cursor: TokenCursor, previous: str) -> Source | None:
        if not opens_call(cursor):
            return None
        cursor.position += 2
        cursor.usage = usage
        source = kind(cursor.string("a quoted table name").lower())
        cursor.expect_symbol(TokenType.R_PAREN, ")")
        return source

    return parse
