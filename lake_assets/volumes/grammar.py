"""CREATE EXTERNAL VOLUME, ALTER VOLUME … REFRESH, COPY INTO VOLUME, and the relations a query
reads from a volume: `VOLUME v …` (its files) and `DIRECTORY(VOLUME v)` (its directory table)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot.tokens import TokenType

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.sql.grammar import Grammar, ObjectWords, SourceParser, StatementParser, finished
from lake_assets.sql.relations import opens_call
from lake_assets.sql.statements import Query, Source, Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.sql.types import parse_column_type

CREATE_VOLUME = (
    "CREATE EXTERNAL VOLUME [IF NOT EXISTS] v LOCATION 's3://bucket/dir/' USING CONNECTION c "
    "[DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE|FALSE)] [RECURSIVE = TRUE|FALSE] "
    "[NOTIFICATION = (QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '…')] [COMMENT '…']"
)
COPY_INTO_VOLUME = (
    "COPY INTO VOLUME v [SUBDIRECTORY 'dir/'] FROM TABLE t | FROM (SELECT …) "
    "FILE_FORMAT = (TYPE = CSV|PARQUET|JSON)"
)
VOLUME_SOURCE = (
    "VOLUME v [(col TYPE, …)] USING CSV|PARQUET|JSON [OPTIONS('k' = 'v', …)] "
    "[FILES('a.csv', …)] [SUBDIRECTORY 'dir/']"
)
FORMATS = ("CSV", "PARQUET", "JSON")
WORDS = ObjectWords("volume", (("VOLUME",),))


@dataclass(frozen=True)
class CreateVolume(Statement):
    name: str
    location: str
    connection: str
    directory_enabled: bool = True
    auto_refresh: bool = False
    recursive: bool = True
    comment: str | None = None
    queue_type: str | None = None
    queue_name: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class RefreshVolume(Statement):
    name: str


@dataclass(frozen=True)
class CopyIntoVolume(Statement):
    volume: str
    file_format: str
    subdirectory: str = ""
    table: str | None = None
    query: Query | None = None
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VolumeSource(Source):
    """Files of a volume read as a relation: `VOLUME v [(cols)] USING fmt [OPTIONS…] [FILES…]`."""

    volume: str
    file_format: str
    columns: tuple[Column, ...] | None = None
    options: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] | None = None
    subdirectory: str | None = None

    @property
    def has_header(self) -> bool:
        """Whether each CSV file's first line names its columns (OPTIONS('header' = 'true'))."""
        return self.file_format == "CSV" and self.options.get("header", "").lower() == "true"


@dataclass(frozen=True)
class DirectorySource(Source):
    """`DIRECTORY(VOLUME v)`: the volume's directory table."""

    volume: str


def boolean_setting(values: dict[str, str], key: str, default: bool) -> bool:
    value = values.get(key)
    if value is None:
        return default
    if value.upper() not in ("TRUE", "FALSE"):
        raise LakeError(f"{key} must be TRUE or FALSE, not {value}", f"write {key} = TRUE")
    return value.upper() == "TRUE"


def parse_create_volume(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_VOLUME
    cursor.expect("CREATE", "EXTERNAL", "VOLUME")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a volume name")
    cursor.expect("LOCATION")
    location = cursor.string("a quoted location")
    cursor.expect("USING", "CONNECTION")
    connection = cursor.name("a connection name")
    values: dict[str, str] = {}
    groups = {"DIRECTORY": ("ENABLE", "AUTO_REFRESH"), "NOTIFICATION": ("QUEUE_TYPE", "QUEUE_NAME")}
    while not cursor.at_end():
        word = cursor.word()
        if word in groups:
            cursor.position += 1
            cursor.expect_symbol(TokenType.EQ, "=")
            values.update(cursor.group(groups[word]))
        elif cursor.accept("RECURSIVE"):
            cursor.expect_symbol(TokenType.EQ, "=")
            values["RECURSIVE"] = cursor.setting("TRUE or FALSE for RECURSIVE")
        elif cursor.accept("COMMENT"):
            values["COMMENT"] = cursor.string("a comment")
        else:
            cursor.fail("DIRECTORY, RECURSIVE, NOTIFICATION, COMMENT or the end")
    return CreateVolume(
        name,
        location,
        connection,
        directory_enabled=boolean_setting(values, "ENABLE", True),
        auto_refresh=boolean_setting(values, "AUTO_REFRESH", False),
        recursive=boolean_setting(values, "RECURSIVE", True),
        comment=values.get("COMMENT"),
        queue_type=values.get("QUEUE_TYPE"),
        queue_name=values.get("QUEUE_NAME"),
        if_not_exists=if_not_exists,
    )


def parse_alter_volume(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = "ALTER VOLUME v REFRESH"
    cursor.expect("ALTER", "VOLUME")
    name = cursor.name("a volume name")
    cursor.expect("REFRESH")
    return finished(cursor, RefreshVolume(name))


def parse_copy_into_volume(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = COPY_INTO_VOLUME
    cursor.expect("COPY", "INTO", "VOLUME")
    volume = cursor.name("a volume name")
    subdirectory = cursor.string("a subdirectory") if cursor.accept("SUBDIRECTORY") else ""
    cursor.expect("FROM")
    table = query = None
    if cursor.accept("TABLE"):
        table = cursor.name("a table name")
    else:
        query = _parenthesized_query(cursor, grammar)
    cursor.expect("FILE_FORMAT")
    cursor.expect_symbol(TokenType.EQ, "=")
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    options: dict[str, str] = {}
    while not cursor.accept_symbol(TokenType.R_PAREN):
        key = cursor.identifier("a file format option").upper()
        cursor.expect_symbol(TokenType.EQ, "=")
        options[key] = cursor.setting(f"a value for {key}")
        cursor.accept_symbol(TokenType.COMMA)
    cursor.expect_end()
    file_format = options.pop("TYPE", "").upper()
    if file_format not in FORMATS:
        raise LakeError(
            "FILE_FORMAT needs TYPE = CSV, PARQUET or JSON", f"write it as {COPY_INTO_VOLUME}"
        )
    return CopyIntoVolume(
        volume, file_format, subdirectory, table, query, {k.lower(): v for k, v in options.items()}
    )


def _parenthesized_query(cursor: TokenCursor, grammar: Grammar) -> Query:
    """`(SELECT …)`: the query between the parentheses, its nesting respected."""
    query = grammar.spark(cursor.parenthesized("TABLE t or (SELECT …)"))
    if not isinstance(query, Query):
        raise LakeError(
            "COPY INTO VOLUME … FROM (…) needs a SELECT", f"write it as {COPY_INTO_VOLUME}"
        )
    return query


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


def _volume_relation(cursor: TokenCursor, previous: str) -> Source | None:
    if previous not in ("FROM", "JOIN", ","):
        return None
    return parse_volume_source(cursor)


def _directory_relation(cursor: TokenCursor, previous: str) -> Source | None:
    if not opens_call(cursor):
        return None
    cursor.position += 2
    cursor.usage = "DIRECTORY(VOLUME v)"
    cursor.expect("VOLUME")
    source = DirectorySource(cursor.name("a volume name"))
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return source


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "EXTERNAL", "VOLUME"): parse_create_volume,
    ("ALTER", "VOLUME"): parse_alter_volume,
    ("COPY", "INTO", "VOLUME"): parse_copy_into_volume,
}
SOURCES: dict[str, SourceParser] = {
    "VOLUME": _volume_relation,
    "DIRECTORY": _directory_relation,
}
