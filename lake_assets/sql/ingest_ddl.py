"""The seed's ingestion DDL: storage connections, external volumes, COPY INTO and pipes."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot.tokens import TokenType

from lake_assets.sql.sources import FORMATS, parse_volume_source
from lake_assets.sql.statements import (
    AlterPipe,
    CopyIntoTable,
    CopyIntoVolume,
    CreateConnection,
    CreatePipe,
    CreateVolume,
    Query,
    RefreshVolume,
    Statement,
)
from lake_assets.sql.tokens import TokenCursor
from resources.errors import LakeError

CREATE_CONNECTION = (
    "CREATE STORAGE CONNECTION [IF NOT EXISTS] c TYPE OSS|COS|S3|LOCAL ENDPOINT = '…' "
    "ACCESS_ID = '…' ACCESS_KEY = '…' [REGION = '…'] [ROLE_ARN = '…']"
)
CREATE_VOLUME = (
    "CREATE EXTERNAL VOLUME [IF NOT EXISTS] v LOCATION 's3://bucket/dir/' USING CONNECTION c "
    "[DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE|FALSE)] [RECURSIVE = TRUE|FALSE] "
    "[NOTIFICATION = (QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '…')] [COMMENT '…']"
)
COPY_INTO_VOLUME = (
    "COPY INTO VOLUME v [SUBDIRECTORY 'dir/'] FROM TABLE t | FROM (SELECT …) "
    "FILE_FORMAT = (TYPE = CSV|PARQUET|JSON)"
)
COPY_INTO_TABLE = (
    "COPY INTO t FROM VOLUME v [(col TYPE, …)] USING CSV|PARQUET|JSON [OPTIONS(…)] "
    "[FILES(…)] [SUBDIRECTORY '…'] [PURGE = TRUE] [FORCE = TRUE]"
)
CREATE_PIPE = (
    "CREATE PIPE [IF NOT EXISTS] p [VIRTUAL_CLUSTER = '…'] INGEST_MODE = 'LIST_PURGE'|"
    "'EVENT_NOTIFICATION' [POLL_INTERVAL = seconds] [BACKFILL_INTERVAL = seconds] [COMMENT '…'] "
    "AS COPY INTO t FROM VOLUME v …"
)
ALTER_PIPE = "ALTER PIPE p REFRESH | ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE|FALSE"
CONNECTION_TYPES = ("OSS", "COS", "S3", "LOCAL")
# How COPY INTO VOLUME … FROM (SELECT …) parses its query: the parser module passes its own.
QueryParser = Callable[[str], Statement]
INGEST_MODES = ("LIST_PURGE", "EVENT_NOTIFICATION")
PIPE_SETTINGS = ("VIRTUAL_CLUSTER", "INGEST_MODE", "POLL_INTERVAL", "BACKFILL_INTERVAL")


def parse_create_connection(cursor: TokenCursor) -> CreateConnection:
    cursor.usage = CREATE_CONNECTION
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a connection name")
    settings: dict[str, str] = {}
    while not cursor.at_end():
        key = cursor.word()
        if key not in ("TYPE", "ENDPOINT", "ACCESS_ID", "ACCESS_KEY", "REGION", "ROLE_ARN"):
            cursor.fail("TYPE, ENDPOINT, ACCESS_ID, ACCESS_KEY, REGION or ROLE_ARN")
        cursor.position += 1
        cursor.accept_symbol(TokenType.EQ)
        settings[key] = cursor.setting(f"a value for {key}")
    connection_type = settings.get("TYPE", "").upper()
    if connection_type not in CONNECTION_TYPES:
        raise LakeError(
            f"storage connection {name} needs TYPE OSS, COS, S3 or LOCAL",
            f"write it as {CREATE_CONNECTION}",
        )
    return CreateConnection(
        name,
        connection_type,
        settings.get("ENDPOINT"),
        settings.get("ACCESS_ID"),
        settings.get("ACCESS_KEY"),
        settings.get("REGION"),
        settings.get("ROLE_ARN"),
        if_not_exists,
    )


def _flag(cursor: TokenCursor, what: str) -> bool:
    cursor.expect_symbol(TokenType.EQ, "=")
    return cursor.boolean(what)


def parse_create_volume(cursor: TokenCursor) -> CreateVolume:
    cursor.usage = CREATE_VOLUME
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a volume name")
    cursor.expect("LOCATION")
    location = cursor.string("a quoted location")
    cursor.expect("USING", "CONNECTION")
    connection = cursor.name("a connection name")
    values: dict[str, str] = {}
    while not cursor.at_end():
        if cursor.accept("DIRECTORY"):
            cursor.expect_symbol(TokenType.EQ, "=")
            values.update(cursor.group(("ENABLE", "AUTO_REFRESH")))
        elif cursor.accept("RECURSIVE"):
            cursor.expect_symbol(TokenType.EQ, "=")
            values["RECURSIVE"] = cursor.setting("TRUE or FALSE for RECURSIVE")
        elif cursor.accept("NOTIFICATION"):
            cursor.expect_symbol(TokenType.EQ, "=")
            values.update(cursor.group(("QUEUE_TYPE", "QUEUE_NAME")))
        elif cursor.accept("COMMENT"):
            values["COMMENT"] = cursor.string("a comment")
        else:
            cursor.fail("DIRECTORY, RECURSIVE, NOTIFICATION, COMMENT or the end")
    return CreateVolume(
        name,
        location,
        connection,
        directory_enabled=_boolean(values, "ENABLE", True),
        auto_refresh=_boolean(values, "AUTO_REFRESH", False),
        recursive=_boolean(values, "RECURSIVE", True),
        comment=values.get("COMMENT"),
        queue_type=values.get("QUEUE_TYPE"),
        queue_name=values.get("QUEUE_NAME"),
        if_not_exists=if_not_exists,
    )


def _boolean(values: dict[str, str], key: str, default: bool) -> bool:
    value = values.get(key)
    if value is None:
        return default
    if value.upper() not in ("TRUE", "FALSE"):
        raise LakeError(f"{key} must be TRUE or FALSE, not {value}", f"write {key} = TRUE")
    return value.upper() == "TRUE"


def parse_alter_volume(cursor: TokenCursor) -> RefreshVolume:
    cursor.usage = "ALTER VOLUME v REFRESH"
    name = cursor.name("a volume name")
    cursor.expect("REFRESH")
    cursor.expect_end()
    return RefreshVolume(name)


def parse_copy(cursor: TokenCursor, text: str, parse_query: QueryParser) -> Statement:
    """COPY INTO VOLUME … (export) or COPY INTO t FROM VOLUME … (load)."""
    cursor.expect("COPY", "INTO")
    if cursor.accept("VOLUME"):
        return _copy_into_volume(cursor, text, parse_query)
    statement = parse_copy_into_table(cursor)
    cursor.expect_end()
    return statement


def parse_copy_into_table(cursor: TokenCursor) -> CopyIntoTable:
    cursor.usage = COPY_INTO_TABLE
    table = cursor.name("a table name")
    cursor.expect("FROM")
    source = parse_volume_source(cursor)
    cursor.usage = COPY_INTO_TABLE
    purge = force = False
    while not cursor.at_end():
        if cursor.accept("PURGE"):
            purge = _flag(cursor, "PURGE")
        elif cursor.accept("FORCE"):
            force = _flag(cursor, "FORCE")
        else:
            break
    return CopyIntoTable(table, source, purge, force)


def _copy_into_volume(cursor: TokenCursor, text: str, parse_query: QueryParser) -> CopyIntoVolume:
    cursor.usage = COPY_INTO_VOLUME
    volume = cursor.name("a volume name")
    subdirectory = cursor.string("a subdirectory") if cursor.accept("SUBDIRECTORY") else ""
    cursor.expect("FROM")
    table = query = None
    if cursor.accept("TABLE"):
        table = cursor.name("a table name")
    else:
        open_token = cursor.peek()
        cursor.expect_symbol(TokenType.L_PAREN, "TABLE t or (SELECT …)")
        depth = 1
        while depth:
            token = cursor.peek()
            if token is None:
                cursor.fail("')' closing the query")
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
            cursor.position += 1
        close = cursor.tokens[cursor.position - 1]
        query = parse_query(text[open_token.end + 1 : close.start])
        if not isinstance(query, Query):
            raise LakeError(
                "COPY INTO VOLUME … FROM (…) needs a SELECT", f"write it as {COPY_INTO_VOLUME}"
            )
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


def parse_create_pipe(cursor: TokenCursor, text: str) -> CreatePipe:
    cursor.usage = CREATE_PIPE
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a pipe name")
    settings: dict[str, str] = {}
    comment = None
    while not cursor.accept("AS"):
        if cursor.accept("COMMENT"):
            comment = cursor.string("a comment")
            continue
        key = cursor.word()
        if key not in PIPE_SETTINGS:
            cursor.fail(f"{', '.join(PIPE_SETTINGS)}, COMMENT or AS")
        cursor.position += 1
        cursor.expect_symbol(TokenType.EQ, "=")
        settings[key] = cursor.setting(f"a value for {key}")
    copy_start = cursor.peek()
    if copy_start is None:
        cursor.fail("COPY INTO …")
    cursor.expect("COPY", "INTO")
    if cursor.word() == "VOLUME":
        raise LakeError("a pipe loads a table, not a volume", f"write it as {CREATE_PIPE}")
    copy = parse_copy_into_table(cursor)
    cursor.expect_end()
    mode = settings.get("INGEST_MODE", "LIST_PURGE").upper()
    if mode not in INGEST_MODES:
        raise LakeError(
            f"INGEST_MODE '{mode}' is not supported", "use 'LIST_PURGE' or 'EVENT_NOTIFICATION'"
        )
    if "BACKFILL_INTERVAL" in settings and mode != "EVENT_NOTIFICATION":
        raise LakeError(
            f"pipe {name}: BACKFILL_INTERVAL applies to INGEST_MODE = 'EVENT_NOTIFICATION' only",
            "drop BACKFILL_INTERVAL (a LIST_PURGE pipe lists the volume every POLL_INTERVAL)",
        )
    return CreatePipe(
        name,
        copy,
        text[copy_start.start :].strip(),
        mode,
        settings.get("VIRTUAL_CLUSTER"),
        comment,
        _seconds(settings, "POLL_INTERVAL", 5),
        if_not_exists,
        _seconds(settings, "BACKFILL_INTERVAL", 60),
    )


def _seconds(settings: dict[str, str], key: str, default: int) -> int:
    value = settings.get(key, str(default))
    if not value.isdigit() or int(value) < 1:
        raise LakeError(
            f"{key} {value} is not a whole number of seconds", f"use e.g. {key} = {default}"
        )
    return int(value)


def parse_alter_pipe(cursor: TokenCursor) -> AlterPipe:
    cursor.usage = ALTER_PIPE
    name = cursor.name("a pipe name")
    if cursor.accept("REFRESH"):
        cursor.expect_end()
        return AlterPipe(name, refresh=True)
    cursor.expect("SET")
    if not cursor.accept("PIPE_EXECUTION_PAUSED"):
        raise LakeError(
            f"pipe {name}: only PIPE_EXECUTION_PAUSED can be altered; its COPY statement cannot",
            "DROP PIPE and CREATE it again with the new statement",
        )
    paused = _flag(cursor, "PIPE_EXECUTION_PAUSED")
    cursor.expect_end()
    return AlterPipe(name, paused=paused)
