"""COPY INTO a table from a volume, CREATE PIPE / ALTER PIPE, and `load_history('t')`."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.core.states import IngestMode
from lake_assets.sql.grammar import Grammar, ObjectWords, SourceParser, StatementParser, finished
from lake_assets.sql.relations import opens_call
from lake_assets.sql.statements import Source, Statement
from lake_assets.sql.tokens import TokenCursor, tokenize
from lake_assets.volumes.grammar import VolumeSource, parse_volume_source

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
PIPE_SETTINGS = ("VIRTUAL_CLUSTER", "INGEST_MODE", "POLL_INTERVAL", "BACKFILL_INTERVAL")
WORDS = ObjectWords("pipe", (("PIPE",),))


@dataclass(frozen=True)
class CopyIntoTable(Statement):
    table: str
    source: VolumeSource
    purge: bool = False
    force: bool = False


@dataclass(frozen=True)
class CreatePipe(Statement):
    name: str
    copy: CopyIntoTable
    copy_text: str
    ingest_mode: IngestMode = IngestMode.LIST_PURGE
    virtual_cluster: str | None = None
    comment: str | None = None
    poll_interval_seconds: int = 5
    if_not_exists: bool = False
    backfill_interval_seconds: int = 60


@dataclass(frozen=True)
class AlterPipe(Statement):
    name: str
    paused: bool | None = None
    refresh: bool = False


@dataclass(frozen=True)
class LoadHistorySource(Source):
    """`load_history('t')`: the table's load records of the retention window."""

    table: str


def _flag(cursor: TokenCursor, what: str) -> bool:
    cursor.expect_symbol(TokenType.EQ, "=")
    return cursor.boolean(what)


@functools.cache
def copy_of(text: str) -> CopyIntoTable:
    """A COPY INTO statement's text (as a pipe keeps it) parsed once per process."""
    cursor = TokenCursor(tokenize(text), text=text)
    cursor.expect("COPY", "INTO")
    return parse_copy_into_table(cursor)


def _parse_copy(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.expect("COPY", "INTO")
    return finished(cursor, parse_copy_into_table(cursor))


def parse_copy_into_table(cursor: TokenCursor) -> CopyIntoTable:
    """After `COPY INTO`: the table, its volume source and the COPY's options."""
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


def parse_create_pipe(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_PIPE
    cursor.expect("CREATE", "PIPE")
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
    mode = settings.get("INGEST_MODE", IngestMode.LIST_PURGE).upper()
    if mode not in IngestMode.__members__:
        raise LakeError(
            f"INGEST_MODE '{mode}' is not supported", "use 'LIST_PURGE' or 'EVENT_NOTIFICATION'"
        )
    if "BACKFILL_INTERVAL" in settings and mode != IngestMode.EVENT_NOTIFICATION:
        raise LakeError(
            f"pipe {name}: BACKFILL_INTERVAL applies to INGEST_MODE = 'EVENT_NOTIFICATION' only",
            "drop BACKFILL_INTERVAL (a LIST_PURGE pipe lists the volume every POLL_INTERVAL)",
        )
    return CreatePipe(
        name,
        copy,
        cursor.text[copy_start.start :].strip(),
        IngestMode(mode),
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


def parse_alter_pipe(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = ALTER_PIPE
    cursor.expect("ALTER", "PIPE")
    name = cursor.name("a pipe name")
    if cursor.accept("REFRESH"):
        return finished(cursor, AlterPipe(name, refresh=True))
    cursor.expect("SET")
    if not cursor.accept("PIPE_EXECUTION_PAUSED"):
        raise LakeError(
            f"pipe {name}: only PIPE_EXECUTION_PAUSED can be altered; its COPY statement cannot",
            "DROP PIPE and CREATE it again with the new statement",
        )
    return finished(cursor, AlterPipe(name, paused=_flag(cursor, "PIPE_EXECUTION_PAUSED")))


def _load_history_relation(cursor: TokenCursor, previous: str) -> Source | None:
    if not opens_call(cursor):
        return None
    cursor.position += 2
    cursor.usage = "load_history('table')"
    source = LoadHistorySource(cursor.string("a quoted table name").lower())
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return source


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("COPY", "INTO"): _parse_copy,
    ("CREATE", "PIPE"): parse_create_pipe,
    ("ALTER", "PIPE"): parse_alter_pipe,
}
SOURCES: dict[str, SourceParser] = {"LOAD_HISTORY": _load_history_relation}
