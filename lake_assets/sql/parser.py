"""Parse a script of the seed's dialect: our own DDL forms, and Spark SQL through sqlglot."""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from lake_assets.sql.dynamic_ddl import parse_create_dynamic_table, parse_dynamic_table_statement
from lake_assets.sql.ingest_ddl import (
    parse_alter_pipe,
    parse_alter_volume,
    parse_copy,
    parse_create_connection,
    parse_create_pipe,
    parse_create_volume,
)
from lake_assets.sql.sources import extract_sources
from lake_assets.sql.statements import (
    AlterTableProperties,
    CreateTable,
    DescribeHistory,
    DescribeObject,
    DescribeTable,
    Dml,
    DropObject,
    DropTable,
    Query,
    ShowObjects,
    ShowTables,
    Statement,
)
from lake_assets.sql.tokens import TokenCursor, tokenize
from lake_assets.sql.types import parse_column_type
from resources.catalog import Column
from resources.errors import LakeError

CREATE_TABLE = "CREATE TABLE [IF NOT EXISTS] name (col TYPE [COMMENT '…'], …) [COMMENT '…']"
DROP_TABLE = "DROP TABLE [IF EXISTS] name"
ALTER_TABLE = "ALTER TABLE name SET PROPERTIES ('change_tracking' = 'true')"
DESCRIBE = (
    "DESC [TABLE] name | DESC HISTORY name | DESC VOLUME|PIPE [EXTENDED]|CONNECTION name "
    "| DESC DYNAMIC TABLE name"
)
SHOW = "SHOW TABLES | VOLUMES | PIPES | CONNECTIONS | DYNAMIC TABLES"

# sqlglot's messages quote tokens as `<Token token_type: …, text: X, …>`; users need only X.
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: ([^,]*), [^>]*>|<class '[\w.]*\.(\w+)'>")
_SPARK_STATEMENTS = {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE"}


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


def parse_script(text: str) -> list[Statement]:
    """Parse every statement before any runs, so a typo in the last one stops the whole script."""
    parsed: list[Statement] = []
    for number, statement in enumerate(split_statements(text), start=1):
        try:
            parsed.append(parse_statement(statement))
        except LakeError as error:
            raise StatementError(number, error) from error
    return parsed


class StatementError(LakeError):
    """A LakeError that knows which statement of the script it came from."""

    def __init__(self, number: int, error: LakeError) -> None:
        super().__init__(error.what, error.fix)
        self.number = number


def parse_statement(text: str) -> Statement:
    tokens = tokenize(text)
    cursor = TokenCursor(tokens)
    first = cursor.word()
    parse = _DDL_PARSERS.get(first)
    if parse is not None:
        return parse(cursor, text)
    if first in _SPARK_STATEMENTS or (tokens and tokens[0].token_type == TokenType.L_PAREN):
        return _parse_spark(text)
    raise _unsupported(tokens)


def _unsupported(tokens: list[Token]) -> LakeError:
    words = " ".join(token.text.upper() for token in tokens[:3])
    return LakeError(
        f"not supported yet: {words} …",
        "see README's SQL reference for the statements `lake sql` runs",
    )


def _parse_create(cursor: TokenCursor, text: str) -> Statement:
    cursor.usage = CREATE_TABLE
    cursor.expect("CREATE")
    or_replace = cursor.accept("OR", "REPLACE")
    if cursor.accept("DYNAMIC", "TABLE"):
        return parse_create_dynamic_table(cursor, text, _parse_spark, or_replace)
    if or_replace:
        raise _unsupported(cursor.tokens)
    if cursor.accept("STORAGE", "CONNECTION"):
        return _finished(cursor, parse_create_connection(cursor))
    if cursor.accept("EXTERNAL", "VOLUME"):
        return _finished(cursor, parse_create_volume(cursor))
    if cursor.accept("PIPE"):
        return parse_create_pipe(cursor, text)
    if not cursor.accept("TABLE"):
        raise _unsupported(cursor.tokens)
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


def _finished(cursor: TokenCursor, statement: Statement) -> Statement:
    cursor.expect_end()
    return statement


# Object kinds as DROP/SHOW/DESC spell them, and the kind the engine knows them by.
_OBJECT_WORDS = {
    ("VOLUME",): "volume",
    ("PIPE",): "pipe",
    ("STORAGE", "CONNECTION"): "connection",
    ("CONNECTION",): "connection",
}


def _object_kind(cursor: TokenCursor, plural: bool = False) -> str | None:
    for words, kind in _OBJECT_WORDS.items():
        spelled = (*words[:-1], words[-1] + "S") if plural else words
        if cursor.accept(*spelled):
            return kind
    return None


def _parse_drop(cursor: TokenCursor, text: str) -> Statement:
    cursor.usage = DROP_TABLE
    cursor.expect("DROP")
    if cursor.accept("DYNAMIC", "TABLE"):
        return parse_dynamic_table_statement(cursor, "DROP")
    kind = _object_kind(cursor)
    if kind is not None:
        cursor.usage = f"DROP {kind.upper()} [IF EXISTS] name"
        if_exists = cursor.accept("IF", "EXISTS")
        return _finished(cursor, DropObject(kind, cursor.name(f"a {kind} name"), if_exists))
    if not cursor.accept("TABLE"):
        raise _unsupported(cursor.tokens)
    if_exists = cursor.accept("IF", "EXISTS")
    name = cursor.name("a table name")
    cursor.expect_end()
    return DropTable(name, if_exists)


def _parse_alter(cursor: TokenCursor, text: str) -> Statement:
    cursor.usage = ALTER_TABLE
    cursor.expect("ALTER")
    if cursor.accept("DYNAMIC", "TABLE"):
        return parse_dynamic_table_statement(cursor, "ALTER")
    if cursor.accept("VOLUME"):
        return parse_alter_volume(cursor)
    if cursor.accept("PIPE"):
        return parse_alter_pipe(cursor)
    if not cursor.accept("TABLE"):
        raise _unsupported(cursor.tokens)
    name = cursor.name("a table name")
    if not cursor.accept("SET", "PROPERTIES"):
        raise _unsupported(cursor.tokens)
    properties = cursor.properties()
    cursor.expect_end()
    return AlterTableProperties(name, properties)


def _parse_describe(cursor: TokenCursor, text: str) -> Statement:
    cursor.usage = DESCRIBE
    cursor.position += 1
    if cursor.accept("DYNAMIC", "TABLE"):
        return parse_dynamic_table_statement(cursor, "DESC")
    kind = _object_kind(cursor)
    if kind is not None:
        extended = cursor.accept("EXTENDED")
        return _finished(cursor, DescribeObject(kind, cursor.name(f"a {kind} name"), extended))
    if cursor.word() == "HISTORY" and cursor.peek(1) is not None:
        cursor.position += 1
        statement: Statement = DescribeHistory(cursor.name("a table name"))
    else:
        cursor.accept("TABLE")
        cursor.accept("EXTENDED")
        statement = DescribeTable(cursor.name("a table name"))
    cursor.expect_end()
    return statement


def _parse_show(cursor: TokenCursor, text: str) -> Statement:
    cursor.usage = SHOW
    cursor.expect("SHOW")
    if cursor.accept("DYNAMIC"):
        return parse_dynamic_table_statement(cursor, "SHOW")
    kind = _object_kind(cursor, plural=True)
    if kind is not None:
        return _finished(cursor, ShowObjects(kind))
    if not cursor.accept("TABLES"):
        raise _unsupported(cursor.tokens)
    cursor.expect_end()
    return ShowTables()


def _parse_refresh(cursor: TokenCursor, text: str) -> Statement:
    cursor.usage = "REFRESH DYNAMIC TABLE name"
    cursor.expect("REFRESH", "DYNAMIC", "TABLE")
    return parse_dynamic_table_statement(cursor, "REFRESH")


def _parse_copy(cursor: TokenCursor, text: str) -> Statement:
    return parse_copy(cursor, text, _parse_spark)


_DDL_PARSERS: dict[str, Callable[[TokenCursor, str], Statement]] = {
    "COPY": _parse_copy,
    "CREATE": _parse_create,
    "DROP": _parse_drop,
    "ALTER": _parse_alter,
    "DESC": _parse_describe,
    "DESCRIBE": _parse_describe,
    "SHOW": _parse_show,
    "REFRESH": _parse_refresh,
}


def _parse_spark(text: str) -> Statement:
    text, sources = extract_sources(text)
    try:
        expression = sqlglot.parse_one(text, read="spark")
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        description = _TOKEN_REPR.sub(
            lambda m: f"'{m.group(1)}'" if m.group(1) else m.group(2),
            str(detail.get("description") or error),
        )
        near = detail.get("highlight") or ""
        where = f" at line {detail['line']}" if "line" in detail else ""
        raise LakeError(
            f"syntax error{where}: {description}",
            f"correct the SQL near '{near}'" if near else "check the statement's syntax",
        ) from None
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
        return Dml(type(expression).__name__.upper(), target.name.lower(), expression, sources)
    raise _unsupported(tokenize(text))
