"""CREATE [OR REPLACE] VIEW and the forms every kind shares, parsed without Spark: the view's query
goes through the same checks as any user query."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.sql.statements import DescribeObject, DropObject, ShowObjects
from lake_assets.views.grammar import CreateView


def parse_error(text: str) -> str:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_create_view_keeps_its_query_as_written() -> None:
    statement = parse_statement(
        "CREATE OR REPLACE VIEW Big_Orders COMMENT 'over 100' AS SELECT id, amount FROM orders "
        "WHERE amount > 100"
    )
    assert isinstance(statement, CreateView)
    assert (statement.name, statement.comment, statement.or_replace, statement.if_not_exists) == (
        "big_orders",
        "over 100",
        True,
        False,
    )
    assert statement.query_text == "SELECT id, amount FROM orders WHERE amount > 100"


def test_if_not_exists_and_a_with_query() -> None:
    statement = parse_statement(
        "CREATE VIEW IF NOT EXISTS v AS WITH big AS (SELECT * FROM t) SELECT * FROM big"
    )
    assert isinstance(statement, CreateView)
    assert (statement.if_not_exists, statement.or_replace) == (True, False)


def test_show_desc_and_drop_take_the_shared_forms() -> None:
    assert parse_statement("SHOW VIEWS") == ShowObjects("view")
    assert parse_statement("DESC VIEW v") == DescribeObject("view", "v")
    assert parse_statement("DESCRIBE VIEW v") == DescribeObject("view", "v")
    assert parse_statement("DROP VIEW IF EXISTS v") == DropObject("view", "v", True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "CREATE OR REPLACE VIEW IF NOT EXISTS v AS SELECT 1",
            "OR REPLACE and IF NOT EXISTS cannot be used together",
        ),
        ("CREATE VIEW v AS INSERT INTO t SELECT 1", "view v must be defined by a SELECT"),
        ("CREATE VIEW v SELECT 1", "expected AS"),
        ("CREATE VIEW s.v AS SELECT 1", "names a schema"),
        ("CREATE VIEW `__lake_x` AS SELECT 1", "cannot be a view name"),
        (
            "CREATE VIEW v AS SELECT * FROM VOLUME vol USING CSV",
            "view v can read only tables, dynamic tables and views",
        ),
    ],
)
def test_a_malformed_create_view_is_refused_in_one_line(text: str, expected: str) -> None:
    assert expected in parse_error(text)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT * FROM csv.`/etc/passwd`", "reads files directly"),
        ("SELECT * FROM __lake_source_0", "a name the lakehouse keeps for itself"),
        ("SELECT reflect('java.lang.System', 'getenv', 'HOME')", "reaches outside the catalog"),
        ("SELECT * FROM read_files('/etc')", "reaches outside the catalog"),
    ],
)
def test_a_view_s_query_cannot_reach_files_or_hidden_names(query: str, expected: str) -> None:
    assert expected in parse_error(f"CREATE VIEW v AS {query}")
