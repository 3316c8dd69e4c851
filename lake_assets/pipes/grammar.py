"""COPY INTO a table as a statement, CREATE PIPE / ALTER PIPE, `load_history('t')` and
`rejected_rows('t')`."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.pipes.copy_grammar import (
    CopyIntoTable,
    flag,
    parse_copy_into_table,
)
from lake_assets.pipes.entry import IngestMode
from lake_assets.pipes.kafka.grammar import (
    KafkaSource,
    kafka_errors_relation,
    read_kafka_relation,
)
from lake_assets.sql.grammar import Grammar, ObjectWords, SourceParser, StatementParser, finished
from lake_assets.sql.relations import extract_sources, table_relation
from lake_assets.sql.statements import Query, Source, Statement
from lake_assets.sql.tokens import TokenCursor, tokenize

CREATE_PIPE = (
    "CREATE PIPE [IF NOT EXISTS] p [VIRTUAL_CLUSTER = '…'] INGEST_MODE = 'LIST_PURGE'|"
    "'EVENT_NOTIFICATION' [POLL_INTERVAL = seconds] [BACKFILL_INTERVAL = seconds] [COMMENT '…'] "
    "AS COPY INTO t FROM VOLUME v …"
)
CREATE_KAFKA_PIPE = (
    "CREATE PIPE [IF NOT EXISTS] p [VIRTUAL_CLUSTER = '…'] [BATCH_INTERVAL_IN_SECONDS = 'n'] "
    "[BATCH_SIZE_PER_KAFKA_PARTITION = n] [COMMENT '…'] AS COPY INTO t FROM (SELECT … FROM "
    "TABLE(READ_KAFKA(…)))"
)
ALTER_PIPE = "ALTER PIPE p REFRESH | ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE|FALSE"
VOLUME_SETTINGS = ("INGEST_MODE", "POLL_INTERVAL", "BACKFILL_INTERVAL")
KAFKA_SETTINGS = ("BATCH_INTERVAL_IN_SECONDS", "BATCH_SIZE_PER_KAFKA_PARTITION")
PIPE_SETTINGS = ("VIRTUAL_CLUSTER", *VOLUME_SETTINGS, *KAFKA_SETTINGS)
WORDS = ObjectWords("pipe", (("PIPE",),))


@dataclass(frozen=True)
class KafkaCopy:
    """`COPY INTO t FROM (SELECT … FROM TABLE(READ_KAFKA(…)))`: its query reads the topic as
    the relation `placeholder`."""

    table: str
    query: Query
    placeholder: str

    @property
    def kafka(self) -> KafkaSource:
        source = self.query.sources[self.placeholder]
        assert isinstance(source, KafkaSource)
        return source


@dataclass(frozen=True)
class CreatePipe(Statement):
    name: str
    copy: CopyIntoTable | KafkaCopy
    copy_text: str
    ingest_mode: IngestMode = IngestMode.LIST_PURGE
    virtual_cluster: str | None = None
    comment: str | None = None
    poll_interval_seconds: int = 5
    if_not_exists: bool = False
    backfill_interval_seconds: int = 60
    batch_interval_seconds: int = 60
    batch_size_per_partition: int | None = None


@dataclass(frozen=True)
class AlterPipe(Statement):
    name: str
    paused: bool | None = None
    refresh: bool = False


@dataclass(frozen=True)
class LoadHistorySource(Source):
    """`load_history('t')`: the table's load records of the retention window."""

    table: str


@dataclass(frozen=True)
class RejectedRowsSource(Source):
    """`rejected_rows('t')`: the records loads into the table rejected, kept as long as their
    load records."""

    table: str


def _parse_copy(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.expect("COPY", "INTO")
    if _reads_query(cursor):
        raise LakeError(
            "COPY INTO t FROM (SELECT …) runs only as a pipe's statement",
            "CREATE PIPE p AS COPY INTO t FROM (…), or read once with "
            "INSERT INTO t SELECT … FROM TABLE(READ_KAFKA(…))",
        )
    return finished(cursor, parse_copy_into_table(cursor))


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
    copy_text = cursor.text[copy_start.start :].strip()
    if _reads_query(cursor):
        kafka_copy = parse_kafka_copy(cursor, grammar)
        cursor.expect_end()
        return _kafka_pipe(name, kafka_copy, copy_text, settings, comment, if_not_exists)
    copy = parse_copy_into_table(cursor)
    cursor.expect_end()
    return _volume_pipe(name, copy, copy_text, settings, comment, if_not_exists)


def _refuse(name: str, settings: dict[str, str], keys: tuple[str, ...], kind: str) -> None:
    for key in keys:
        if key in settings:
            raise LakeError(
                f"pipe {name}: {key} does not apply to a {kind} pipe",
                f"drop {key} from CREATE PIPE",
            )


def _volume_pipe(
    name: str,
    copy: CopyIntoTable,
    copy_text: str,
    settings: dict[str, str],
    comment: str | None,
    if_not_exists: bool,
) -> CreatePipe:
    _refuse(name, settings, KAFKA_SETTINGS, "volume")
    if copy.validation is not None:
        raise LakeError(
            f"pipe {name}: a pipe's COPY loads, it does not validate",
            "drop VALIDATION_MODE, and check the files with a COPY … VALIDATION_MODE of your own",
        )
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
        copy_text,
        IngestMode(mode),
        settings.get("VIRTUAL_CLUSTER"),
        comment,
        _whole(settings, "POLL_INTERVAL", 5),
        if_not_exists,
        _whole(settings, "BACKFILL_INTERVAL", 60),
    )


def _kafka_pipe(
    name: str,
    copy: KafkaCopy,
    copy_text: str,
    settings: dict[str, str],
    comment: str | None,
    if_not_exists: bool,
) -> CreatePipe:
    _refuse(name, settings, VOLUME_SETTINGS, "Kafka")
    managed = copy.kafka.managed_set()
    if managed:
        raise LakeError(
            f"pipe {name}: READ_KAFKA's {managed[0].replace('_', ' ')} is managed by the pipe",
            "leave the four offset and timestamp arguments '' (the pipe starts at the earliest "
            "offsets and goes on from what it committed)",
        )
    if not copy.kafka.group_id:
        raise LakeError(
            f"pipe {name}: READ_KAFKA needs a consumer group id",
            "name one in READ_KAFKA's fourth argument, unique per pipe and topic",
        )
    size = "BATCH_SIZE_PER_KAFKA_PARTITION"
    return CreatePipe(
        name,
        copy,
        copy_text,
        virtual_cluster=settings.get("VIRTUAL_CLUSTER"),
        comment=comment,
        if_not_exists=if_not_exists,
        batch_interval_seconds=_whole(settings, "BATCH_INTERVAL_IN_SECONDS", 60),
        batch_size_per_partition=_whole(settings, size, 1, "messages")
        if size in settings
        else None,
    )


def _reads_query(cursor: TokenCursor) -> bool:
    """Whether COPY INTO t is followed by FROM ( … ): a query, as a Kafka pipe's is."""
    following = cursor.peek(2)
    return (
        cursor.word(1) == "FROM"
        and following is not None
        and following.token_type == TokenType.L_PAREN
    )


def parse_kafka_copy(cursor: TokenCursor, grammar: Grammar) -> KafkaCopy:
    """After `COPY INTO`: the table and the parenthesized query, which reads one topic."""
    cursor.usage = CREATE_KAFKA_PIPE
    table = cursor.name("a table name")
    cursor.expect("FROM")
    opening = cursor.position
    depth = 0
    for index in range(opening, len(cursor.tokens)):
        kind = cursor.tokens[index].token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0:
            break
    else:
        cursor.position = len(cursor.tokens)
        cursor.fail("')' closing the query")
    inner = cursor.text[cursor.tokens[opening].end + 1 : cursor.tokens[index].start]
    cursor.position = index + 1
    query = grammar.spark(inner.strip())
    kafka = [k for k, v in getattr(query, "sources", {}).items() if isinstance(v, KafkaSource)]
    if not isinstance(query, Query) or len(kafka) != 1:
        raise LakeError(
            "a pipe's COPY INTO t FROM (…) must be a SELECT that reads one TABLE(READ_KAFKA(…))",
            f"write it as {CREATE_KAFKA_PIPE}",
        )
    return KafkaCopy(table, query, kafka[0])


def kafka_copy_of(text: str, grammar: Grammar) -> KafkaCopy:
    """A Kafka pipe's statement (as the catalog keeps it), parsed with the session's grammar
    to run it."""
    cursor = TokenCursor(tokenize(text), text=text)
    cursor.expect("COPY", "INTO")
    return parse_kafka_copy(cursor, grammar)


@functools.cache
def kafka_source_of(text: str) -> KafkaSource:
    """A Kafka pipe's READ_KAFKA call (its topic, group and client settings), parsed once per
    process from its statement, which CREATE PIPE checked reads exactly one."""
    _, sources = extract_sources(text, {"TABLE": read_kafka_relation})
    (source,) = sources.values()
    assert isinstance(source, KafkaSource), "TABLE(READ_KAFKA(…)) is its only relation"
    return source


def _whole(settings: dict[str, str], key: str, default: int, unit: str = "seconds") -> int:
    value = settings.get(key, str(default))
    if not value.isdigit() or int(value) < 1:
        raise LakeError(
            f"{key} {value} is not a whole number of {unit}", f"use e.g. {key} = {default}"
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
    return finished(cursor, AlterPipe(name, paused=flag(cursor, "PIPE_EXECUTION_PAUSED")))


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("COPY", "INTO"): _parse_copy,
    ("CREATE", "PIPE"): parse_create_pipe,
    ("ALTER", "PIPE"): parse_alter_pipe,
}
SOURCES: dict[str, SourceParser] = {
    "LOAD_HISTORY": table_relation(LoadHistorySource, "load_history('table')"),
    "REJECTED_ROWS": table_relation(RejectedRowsSource, "rejected_rows('table')"),
    "TABLE": read_kafka_relation,
    "KAFKA_ERRORS": kafka_errors_relation,
}
