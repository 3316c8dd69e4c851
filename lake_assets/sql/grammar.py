"""The dialect as a table of parsers: each object kind adds its statements and special
relations; the forms every kind shares (SHOW, DESC, DROP) and Spark SQL are parsed here once."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from lake_assets.core.errors import LakeError
from lake_assets.sql.binding import check_user_sql
from lake_assets.sql.relations import extract_sources
from lake_assets.sql.secrets import hidden
from lake_assets.sql.statements import (
    DescribeObject,
    Dml,
    DropObject,
    Query,
    ShowObjects,
    Source,
    Statement,
)
from lake_assets.sql.tokens import TokenCursor, tokenize

StatementParser = Callable[[TokenCursor, "Grammar"], Statement]
# Reads a special relation at the cursor (given the word before it), or returns None untouched.
SourceParser = Callable[[TokenCursor, str], Source | None]

# sqlglot's messages quote tokens as `<Token token_type: …, text: X, …>`; users need only X.
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: ([^,]*), [^>]*>|<class '[\w.]*\.(\w+)'>")
# sqlglot parses recursively, about 20 Python frames per level of parentheses, so Python's
# default limit (1,000 frames) refused queries of 50 levels that Spark runs. 50,000 frames parse
# 2,400 levels of parentheses or 4,000 nested subqueries, beyond what Spark's own parser takes;
# Python 3.11 calls Python functions without the C stack, so a deep limit costs no safety.
_FRAMES = 50_000
sys.setrecursionlimit(max(sys.getrecursionlimit(), _FRAMES))
OVERWRITE = "INSERT OVERWRITE"
_SPARK_STATEMENTS = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE")


@dataclass(frozen=True)
class ObjectWords:
    """How SHOW, DESC and DROP spell one kind: `spellings[0]` is the main one (`("PIPE",)`)."""

    kind: str
    spellings: tuple[tuple[str, ...], ...]

    @property
    def usage_name(self) -> str:
        return " ".join(self.spellings[0])


@dataclass
class Grammar:
    """Statements by their leading words (the longest match wins), special relations by word."""

    statements: dict[tuple[str, ...], StatementParser] = field(default_factory=dict)
    sources: dict[str, SourceParser] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        statements: Iterable[Mapping[tuple[str, ...], StatementParser]],
        sources: Iterable[Mapping[str, SourceParser]],
        objects: Iterable[ObjectWords],
    ) -> Grammar:
        grammar = cls()
        for words in objects:
            for spelling in words.spellings:
                plural = (*spelling[:-1], spelling[-1] + "S")
                grammar.statements[("SHOW", *plural)] = _show(words)
                grammar.statements[("DROP", *spelling)] = _drop(words)
                for verb in ("DESC", "DESCRIBE"):
                    grammar.statements[(verb, *spelling)] = _describe(words)
        for table in statements:
            grammar.statements.update(table)
        for parsers in sources:
            grammar.sources.update(parsers)
        for verb in _SPARK_STATEMENTS:
            grammar.statements[(verb,)] = _spark
        return grammar

    def parse_script(self, text: str) -> list[Statement]:
        """Parse every statement before any runs, so a typo in the last one stops the script."""
        parsed: list[Statement] = []
        for number, statement in enumerate(split_statements(text), start=1):
            try:
                parsed.append(self.parse(statement))
            except LakeError as error:
                raise StatementError(number, error) from error
        return parsed

    def parse(self, text: str) -> Statement:
        """One statement; an error that quotes its text never quotes a secret of it."""
        try:
            return self._parse(text)
        except LakeError as error:
            raise LakeError(hidden(error.what, text), hidden(error.fix, text)) from None
        except RecursionError:
            raise LakeError(
                "the statement nests deeper than its parser goes (about 2,400 levels of "
                "parentheses)",
                "split it: compute its inner parts as tables or views first",
            ) from None

    def _parse(self, text: str) -> Statement:
        tokens = tokenize(text)
        cursor = TokenCursor(tokens, text=text)
        parse = self._parser_at(cursor)
        if parse is not None:
            return parse(cursor, self)
        if tokens and tokens[0].token_type == TokenType.L_PAREN:
            return self.spark(text)
        raise unsupported(tokens)

    def _parser_at(self, cursor: TokenCursor) -> StatementParser | None:
        longest = 0
        found = None
        for words, parse in self.statements.items():
            if len(words) > longest and all(
                cursor.word(offset) == word for offset, word in enumerate(words)
            ):
                longest, found = len(words), parse
        return found

    def spark(self, text: str) -> Statement:
        """A Spark SQL query or DML statement, its special relations cut out as placeholders."""
        text, sources = extract_sources(text, self.sources)
        try:
            expression = sqlglot.parse_one(text, read="spark")
        except ParseError as error:
            raise _syntax_error(error) from None
        check_user_sql(expression, sources)
        if isinstance(expression, exp.Query):
            return Query(expression, sources)
        if isinstance(expression, exp.Insert | exp.Update | exp.Delete | exp.Merge):
            target = expression.this
            if isinstance(target, exp.Schema):
                target = target.this
            if not isinstance(target, exp.Table):
                raise LakeError(
                    f"{type(expression).__name__.upper()} must name its target table",
                    "write the table's name after INTO / UPDATE / FROM",
                )
            operation = type(expression).__name__.upper()
            if isinstance(expression, exp.Insert) and expression.args.get("overwrite"):
                operation = OVERWRITE
            return Dml(operation, target.name.lower(), expression, sources)
        raise unsupported(tokenize(text))

    def query_after(self, cursor: TokenCursor, what: str, usage: str) -> tuple[Query, str]:
        """The SELECT from the cursor to the end of the statement, and its text."""
        start = cursor.peek()
        if start is None:
            cursor.fail("SELECT …")
        text = cursor.text[start.start :].strip()
        query = self.spark(text)
        if not isinstance(query, Query):
            raise LakeError(f"{what} must be defined by a SELECT", f"write it as {usage}")
        cursor.position = len(cursor.tokens)
        return query, text


def _spark(cursor: TokenCursor, grammar: Grammar) -> Statement:
    return grammar.spark(cursor.text)


def _syntax_error(error: ParseError) -> LakeError:
    detail = error.errors[0] if error.errors else {}
    description = _TOKEN_REPR.sub(
        lambda m: f"'{m.group(1)}'" if m.group(1) else m.group(2),
        str(detail.get("description") or error),
    )
    near = detail.get("highlight") or ""
    where = f" at line {detail['line']}" if "line" in detail else ""
    return LakeError(
        f"syntax error{where}: {description}",
        f"correct the SQL near '{near}'" if near else "check the statement's syntax",
    )


def _accept_spelling(cursor: TokenCursor, words: ObjectWords, plural: bool = False) -> None:
    for spelling in sorted(words.spellings, key=len, reverse=True):
        spelled = (*spelling[:-1], spelling[-1] + "S") if plural else spelling
        if cursor.accept(*spelled):
            return


def _show(words: ObjectWords) -> StatementParser:
    def parse(cursor: TokenCursor, grammar: Grammar) -> Statement:
        cursor.usage = f"SHOW {words.usage_name}S"
        cursor.expect("SHOW")
        _accept_spelling(cursor, words, plural=True)
        cursor.expect_end()
        return ShowObjects(words.kind)

    return parse


def _describe(words: ObjectWords) -> StatementParser:
    def parse(cursor: TokenCursor, grammar: Grammar) -> Statement:
        cursor.usage = f"DESC {words.usage_name} [EXTENDED] name"
        cursor.position += 1
        _accept_spelling(cursor, words)
        extended = cursor.accept("EXTENDED")
        name = cursor.name(f"a {words.kind} name")
        cursor.expect_end()
        return DescribeObject(words.kind, name, extended)

    return parse


def _drop(words: ObjectWords) -> StatementParser:
    def parse(cursor: TokenCursor, grammar: Grammar) -> Statement:
        cursor.usage = f"DROP {words.usage_name} [IF EXISTS] name"
        cursor.expect("DROP")
        _accept_spelling(cursor, words)
        if_exists = cursor.accept("IF", "EXISTS")
        name = cursor.name(f"a {words.kind} name")
        cursor.expect_end()
        return DropObject(words.kind, name, if_exists)

    return parse


def split_statements(text: str) -> list[str]:
    """Split a script on top-level semicolons; comment-only pieces are dropped."""
    statements: list[str] = []
    start = 0
    has_tokens = False
    for token in tokenize(text):
        if token.token_type == TokenType.SEMICOLON:
            if has_tokens:
                statements.append(text[start : token.start].strip())
            start, has_tokens = token.end + 1, False
        else:
            has_tokens = True
    if has_tokens:
        statements.append(text[start:].strip())
    return statements


class StatementError(LakeError):
    """A LakeError that knows which statement of the script it came from."""

    def __init__(self, number: int, error: LakeError) -> None:
        super().__init__(error.what, error.fix)
        self.number = number


def unsupported(tokens: list[Token]) -> LakeError:
    words = " ".join(token.text.upper() for token in tokens[:3])
    return LakeError(
        f"not supported yet: {words} …",
        "see the SQL reference (docs/sql.md) for the statements `lake sql` runs",
    )


def finished(cursor: TokenCursor, statement: Statement) -> Statement:
    """The statement, once nothing follows it."""
    cursor.expect_end()
    return statement
