"""`TABLE(READ_KAFKA(bootstrap, topic, pattern, group, start offsets, end offsets, start time, end
time, key format, value format, max errors, map(…)))` as a relation of a query."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.sql.relations import opens_call
from lake_assets.sql.secrets import is_secret
from lake_assets.sql.statements import Source
from lake_assets.sql.tokens import TokenCursor
from resources.secrets import ENV, referenced_variable

READ_KAFKA = (
    "TABLE(READ_KAFKA('bootstrap', 'topic', '', 'group_id', 'start_offsets', 'end_offsets', "
    "'start_timestamp', 'end_timestamp', 'raw'|'string', 'raw'|'string', max_errors, "
    "map('kafka.setting', 'value', …)))"
)
# What the pipe manages by itself, as a managed one does: its READ_KAFKA leaves these empty.
MANAGED = ("start_offsets", "end_offsets", "start_timestamp", "end_timestamp")
# Client settings that are READ_KAFKA's own arguments, or that the pipe owns.
RESERVED = {
    "bootstrap.servers": "READ_KAFKA's first argument",
    "group.id": "READ_KAFKA's fourth argument",
    "enable.auto.commit": "the pipe, which commits the group's offsets after each batch",
    "auto.offset.reset": "READ_KAFKA's start offsets (a pipe starts from the earliest)",
}


class KafkaFormat(StrEnum):
    """How a message's key or value is shown: its bytes (BINARY) or UTF-8 text (STRING)."""

    RAW = "raw"
    STRING = "string"


@dataclass(frozen=True)
class KafkaSource(Source):
    """One READ_KAFKA call; `options` are Kafka client settings, secrets as 'env:VAR'."""

    bootstrap: str
    topic: str
    group_id: str
    start_offsets: str = ""
    end_offsets: str = ""
    start_timestamp: str = ""
    end_timestamp: str = ""
    key_format: KafkaFormat = KafkaFormat.RAW
    value_format: KafkaFormat = KafkaFormat.RAW
    max_errors: int = 0
    options: tuple[tuple[str, str], ...] = ()

    def managed_set(self) -> list[str]:
        """The arguments a pipe manages that this call sets."""
        return [name for name in MANAGED if getattr(self, name)]


def _format(cursor: TokenCursor, which: str) -> KafkaFormat:
    value = cursor.string(f"the {which} format ('raw' or 'string')").lower()
    if value not in KafkaFormat._value2member_map_:
        raise LakeError(
            f"READ_KAFKA: {which} format '{value}' is not supported",
            "use 'raw' (the bytes, BINARY) or 'string' (UTF-8 text); parse JSON in the SELECT "
            "with from_json or get_json_object",
        )
    return KafkaFormat(value)


def _options(cursor: TokenCursor) -> tuple[tuple[str, str], ...]:
    """`map('key', 'value', …)` of Kafka client settings."""
    cursor.expect("MAP")
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    values: list[str] = []
    while not cursor.accept_symbol(TokenType.R_PAREN):
        if values:
            cursor.expect_symbol(TokenType.COMMA, ",")
        values.append(cursor.string("a quoted Kafka setting or value"))
    if len(values) % 2:
        raise LakeError(
            "READ_KAFKA: map(…) needs a value for every setting",
            "write map('security.protocol', 'SASL_SSL', 'sasl.mechanism', 'PLAIN', …)",
        )
    pairs = tuple(zip(values[::2], values[1::2], strict=True))
    for key, value in pairs:
        _check_option(key.lower(), value)
    return tuple((key.lower(), value) for key, value in pairs)


def _check_option(key: str, value: str) -> None:
    if key in RESERVED:
        raise LakeError(
            f"READ_KAFKA: '{key}' cannot be set in map(…): it is {RESERVED[key]}",
            f"remove '{key}' from the map",
        )
    if is_secret(key) and not value.startswith(ENV):
        raise LakeError(
            f"READ_KAFKA: '{key}' is a secret and would be kept in the statement's text",
            f"export it and write '{key}', 'env:VARIABLE' instead of the value",
        )
    if value.startswith(ENV):
        referenced_variable(value)


def _arguments(cursor: TokenCursor) -> KafkaSource:
    """READ_KAFKA's twelve arguments, after its '('."""
    strings = []
    for what in (
        "the bootstrap servers ('host:port,…')",
        "the topic",
        "the topic pattern ('': not supported yet)",
        "the consumer group id",
        *(f"the {name.replace('_', ' ')} ('' for none)" for name in MANAGED),
    ):
        strings.append(cursor.string(f"{what} as a quoted string"))
        cursor.expect_symbol(TokenType.COMMA, ",")
    bootstrap, topic, pattern, group_id, *managed = strings
    start_offsets, end_offsets, start_timestamp, end_timestamp = managed
    if pattern:
        raise LakeError(
            "READ_KAFKA: topic patterns are not supported yet",
            "name one topic in the second argument and leave the third ''",
        )
    if not topic or not bootstrap:
        raise LakeError(
            "READ_KAFKA needs the bootstrap servers and a topic",
            f"write it as {READ_KAFKA}",
        )
    key_format = _format(cursor, "key")
    cursor.expect_symbol(TokenType.COMMA, ",")
    value_format = _format(cursor, "value")
    cursor.expect_symbol(TokenType.COMMA, ",")
    max_errors = cursor.integer("the maximum number of bad messages (0 or more)")
    cursor.expect_symbol(TokenType.COMMA, ",")
    options = _options(cursor)
    return KafkaSource(
        bootstrap,
        topic,
        group_id,
        start_offsets,
        end_offsets,
        start_timestamp,
        end_timestamp,
        key_format,
        value_format,
        max_errors,
        options,
    )


def read_kafka_relation(cursor: TokenCursor, previous: str) -> Source | None:
    """`TABLE(READ_KAFKA(…))` after FROM or JOIN; any other TABLE is left to Spark."""
    if previous not in ("FROM", "JOIN", ",") or cursor.word(2) != "READ_KAFKA":
        return None
    cursor.usage = READ_KAFKA
    cursor.expect("TABLE")
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    cursor.expect("READ_KAFKA")
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    source = _arguments(cursor)
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return source


@dataclass(frozen=True)
class KafkaErrorsSource(Source):
    """`kafka_errors('p')`: the messages pipe p set aside, with their errors."""

    pipe: str


def kafka_errors_relation(cursor: TokenCursor, previous: str) -> Source | None:
    if not opens_call(cursor):
        return None
    cursor.position += 2
    cursor.usage = "kafka_errors('pipe')"
    source = KafkaErrorsSource(cursor.string("a quoted pipe name").lower())
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return source
