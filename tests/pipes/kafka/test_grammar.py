"""READ_KAFKA as a relation: a call with a comment after each argument parses; formats, secrets
and reserved settings are refused with a fix; any other TABLE(…) is left to Spark."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.pipes.kafka.grammar import KafkaFormat, KafkaSource
from lake_assets.sql.statements import Query

COMMENTED_CALL = """TABLE(READ_KAFKA( 'kafka-host:9092', -- bootstrap.servers
'orders_topic', -- topic
'', -- topic pattern (not supported yet, leave empty)
'pipe_orders_group', -- group_id (must be unique per Pipe for the same Topic)
'', '', '', '', -- start/end offsets and timestamps, managed by Pipe automatically
'raw', 'raw', -- key/value format
0, map() -- max error count, additional Kafka config
))"""


def kafka_source(call: str) -> KafkaSource:
    query = parse_statement(f"SELECT CAST(value AS STRING) AS raw_msg FROM {call}")
    assert isinstance(query, Query)
    (source,) = query.sources.values()
    assert isinstance(source, KafkaSource)
    return source


def call(*arguments: str) -> str:
    return f"TABLE(READ_KAFKA({', '.join(arguments)}))"


BASE = ("'b:9092'", "'t'", "''", "'g'", "''", "''", "''", "''")


def test_a_call_with_a_comment_after_each_argument_parses() -> None:
    assert kafka_source(COMMENTED_CALL) == KafkaSource(
        "kafka-host:9092", "orders_topic", "pipe_orders_group"
    )


def test_formats_errors_offsets_and_settings() -> None:
    source = kafka_source(
        call(
            "'b:9092'", "'t'", "''", "'g'", "'{\"0\": 5}'", "''", "''", "''", "'string'",
            "'STRING'", "3",
            "map('security.protocol', 'SASL_SSL', 'sasl.password', 'env:LAKE_CONN_PW')",
        )
    )  # fmt: skip
    assert source.start_offsets == '{"0": 5}'
    assert (source.key_format, source.value_format) == (KafkaFormat.STRING, KafkaFormat.STRING)
    assert source.max_errors == 3
    assert source.options == (
        ("security.protocol", "SASL_SSL"),
        ("sasl.password", "env:LAKE_CONN_PW"),
    )
    assert source.managed_set() == ["start_offsets"]


def test_another_table_function_is_left_to_spark() -> None:
    query = parse_statement("SELECT * FROM TABLE(range(3))")
    assert isinstance(query, Query)
    assert query.sources == {}


@pytest.mark.parametrize(
    ("arguments", "what", "fix"),
    [
        ((*BASE, "'avro'", "'raw'", "0", "map()"), "key format 'avro'", "from_json"),
        ((*BASE, "'raw'", "'raw'", "0", "map('group.id', 'x')"), "'group.id' cannot", "remove"),
        (
            (*BASE, "'raw'", "'raw'", "0", "map('sasl.password', 'hunter2')"),
            "'sasl.password' is a secret",
            "'env:VARIABLE'",
        ),
        ((*BASE, "'raw'", "'raw'", "0", "map('a')"), "needs a value", "map("),
        (("'b'", "'t'", "'t.*'", *BASE[3:], "'raw'", "'raw'", "0", "map()"), "patterns", "''"),
        (("'b'", "''", *BASE[2:], "'raw'", "'raw'", "0", "map()"), "needs the bootstrap", "READ"),
        ((*BASE, "'raw'", "'raw'", "map()"), "syntax error", "READ_KAFKA"),
    ],
)
def test_bad_calls_say_what_and_how_to_fix(arguments: tuple[str, ...], what: str, fix: str) -> None:
    with pytest.raises(LakeError) as raised:
        kafka_source(call(*arguments))
    assert what in raised.value.what
    assert fix in raised.value.fix
    assert "hunter2" not in str(raised.value)
