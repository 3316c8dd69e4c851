"""No error about a statement echoes a secret of it (a connection's keys, a Kafka password, a URL's
user info), endpoints with user info are refused, and deep statements parse as deep as Spark
goes and further, or fail in one line naming the limit. No Spark: all are refused before it."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_script, parse_statement
from lake_assets.sql.secrets import hidden, secret_values
from lake_assets.sql.statements import Query
from resources.volumes import endpoint_url

SECRET = "wJalrXUtnFEMI-K7MDENG"


def script_error(text: str) -> str:
    with pytest.raises(LakeError) as caught:
        parse_script(text)
    return str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        # An unclosed quote: the tokenizer's error quotes the text around where it stopped.
        f"CREATE STORAGE CONNECTION c TYPE S3 ACCESS_ID = 'AKIA1' ACCESS_KEY = '{SECRET}",
        f"CREATE STORAGE CONNECTION c TYPE S3 ACCESS_KEY = '{SECRET}' /* never closed",
        f"CREATE STORAGE CONNECTION c TYPE S3 ACCESS_KEY '{SECRET}\\' tail",
        # A syntax error whose message quotes the token it found: the secret itself.
        f"CREATE STORAGE CONNECTION c TYPE S3 ACCESS_KEY = = '{SECRET}'",
        f"CREATE STORAGE CONNECTION c TYPE S3 ACCESS_ID = '{SECRET}' NONSENSE",
        # A Kafka password given as a literal, which READ_KAFKA refuses naming the key only.
        "SELECT * FROM TABLE(READ_KAFKA('127.0.0.1:9092', 't', '', 'g', '', '', '', '', 'raw', "
        f"'raw', 0, map('sasl.password', '{SECRET}', 'x'",
    ],
)
def test_an_error_never_echoes_a_secret_literal(text: str) -> None:
    message = script_error(text)
    assert SECRET not in message
    assert SECRET[:8] not in message  # nor a secret cut short by the tokenizer's window
    assert "\n" not in message


def test_secret_values_are_found_by_the_setting_that_holds_them() -> None:
    text = (
        "ACCESS_ID = 'id1' ACCESS_KEY 'key2' map('sasl.password', 'pw3', 'a', 'b') "
        "OPTIONS('ssl.key.password' = \"pw4\")"
    )
    assert secret_values(text) == {"id1", "key2", "pw3", "pw4"}
    assert hidden("http://id:key@host:1/ and key2", text) == "http://****@host:1/ and ****"


@pytest.mark.parametrize(
    "endpoint", ["http://id:key@127.0.0.1:1", "id:key@minio.local", "https://just-a-user@s3.local"]
)
def test_an_endpoint_holding_credentials_is_refused_without_echoing_them(endpoint: str) -> None:
    with pytest.raises(LakeError) as caught:
        endpoint_url("c", endpoint)
    assert endpoint.split("@")[0].split("//")[-1] not in str(caught.value)  # the user info
    assert "ACCESS_ID and ACCESS_KEY" in caught.value.fix


@pytest.mark.parametrize("depth", [60, 1000])
def test_deep_parentheses_parse(depth: int) -> None:
    statement = parse_statement("SELECT " + "(" * depth + "1" + ")" * depth + " AS x")
    assert isinstance(statement, Query)
    assert statement.expression.sql(dialect="spark").count("(") == depth


def test_two_hundred_nested_subqueries_parse() -> None:
    depth = 200
    text = "SELECT * FROM " + "(SELECT * FROM " * depth + "t" + ") AS x" * depth
    assert isinstance(parse_statement(text), Query)


def test_a_statement_past_the_parsers_depth_is_one_line_naming_the_limit() -> None:
    depth = 5000
    message = script_error("SELECT " + "(" * depth + "1" + ")" * depth)
    assert "nests deeper than its parser goes (about 2,400 levels of parentheses)" in message
    assert "split it" in message
