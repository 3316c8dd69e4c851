"""The parser of `lake sql`: script splitting, Spark SQL through sqlglot, and whole scripts."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_script, parse_statement
from lake_assets.sql.grammar import StatementError, split_statements
from lake_assets.sql.statements import Dml, Query
from lake_assets.tables.grammar import CreateTable, DescribeHistory
from tests.sql.grammar_helpers import SALES_SOURCE, parse_error

# split_statements


def test_split_on_top_level_semicolons():
    assert split_statements("SELECT 1; SELECT 2;") == ["SELECT 1", "SELECT 2"]


def test_split_keeps_a_trailing_statement_without_semicolon():
    assert split_statements("SELECT 1;\n  SELECT 2  ") == ["SELECT 1", "SELECT 2"]


def test_split_ignores_semicolons_inside_strings():
    assert split_statements("SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b'", "SELECT 2"]


def test_split_ignores_semicolons_inside_escaped_strings_and_backquotes():
    script = "SELECT 'it''s; ok'; SELECT 'a\\';b'; SELECT `x;y` FROM t"
    assert split_statements(script) == [
        "SELECT 'it''s; ok'",
        "SELECT 'a\\';b'",
        "SELECT `x;y` FROM t",
    ]


def test_split_ignores_semicolons_inside_line_comments():
    assert split_statements("SELECT 1 -- one; two\n; SELECT 2") == [
        "SELECT 1 -- one; two",
        "SELECT 2",
    ]


def test_split_ignores_semicolons_inside_block_comments():
    assert split_statements("SELECT /* a; b */ 1; SELECT 2") == ["SELECT /* a; b */ 1", "SELECT 2"]


def test_split_drops_comment_only_pieces():
    script = "-- header\n; /* nothing here */ ; SELECT 1; -- trailing note"
    assert split_statements(script) == ["SELECT 1"]


def test_split_drops_empty_pieces():
    assert split_statements("SELECT 1;;; SELECT 2") == ["SELECT 1", "SELECT 2"]


@pytest.mark.parametrize("script", ["", "   \n\t", ";;", "-- just a comment", "/* block */"])
def test_split_of_a_script_without_statements_is_empty(script):
    assert split_statements(script) == []


def test_split_positions_are_right_after_non_ascii_text():
    script = "INSERT INTO t VALUES ('销售;x'); SELECT 'é'; SELECT 3"
    assert split_statements(script) == [
        "INSERT INTO t VALUES ('销售;x')",
        "SELECT 'é'",
        "SELECT 3",
    ]


def test_split_reports_an_unterminated_quote():
    with pytest.raises(LakeError) as caught:
        split_statements("SELECT 'abc; SELECT 2")
    assert "cannot read the SQL text" in caught.value.what
    assert "close every quote" in caught.value.fix


# Spark SQL: DML and queries


@pytest.mark.parametrize(
    ("text", "operation"),
    [
        ("INSERT INTO Sales VALUES (1, 'a')", "INSERT"),
        ("INSERT OVERWRITE Sales SELECT * FROM staging", "INSERT OVERWRITE"),
        ("UPDATE Sales SET amount = 0 WHERE id = 1", "UPDATE"),
        ("DELETE FROM Sales WHERE id = 1", "DELETE"),
        (
            "MERGE INTO Sales USING staging ON Sales.id = staging.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            "MERGE",
        ),
    ],
)
def test_dml_names_its_operation_and_lower_cased_target(text, operation):
    statement = parse_statement(text)
    assert isinstance(statement, Dml)
    assert statement.operation == operation
    assert statement.target == "sales"


def test_insert_with_a_column_list_targets_the_table():
    statement = parse_statement("INSERT INTO t (a, b) SELECT x, y FROM s")
    assert isinstance(statement, Dml)
    assert (statement.operation, statement.target) == ("INSERT", "t")


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "SELECT category, SUM(amount) FROM sales GROUP BY category ORDER BY 2 DESC",
        "WITH c AS (SELECT * FROM sales) SELECT * FROM c",
        "SELECT a FROM t UNION ALL SELECT a FROM u",
        "(SELECT 1)",
    ],
)
def test_queries_parse_to_query(text):
    assert isinstance(parse_statement(text), Query)


def test_select_with_missing_table_is_a_syntax_error_naming_the_token():
    error = parse_error("SELECT FROM WHERE")
    assert error.what == "syntax error at line 1: Expected table name but got 'WHERE'"
    assert error.fix == "correct the SQL near 'WHERE'"


def test_select_with_dangling_operator_is_a_syntax_error():
    error = parse_error("SELECT 1 +")
    assert error.what == "syntax error at line 1: Required keyword: 'expression' missing for Add"
    assert error.fix == "correct the SQL near '+'"


def test_unterminated_string_in_a_query():
    error = parse_error("SELECT 'abc")
    assert "cannot read the SQL text" in error.what
    assert error.fix == "close every quote (') and backquote (`) and every /* comment */"


def test_lake_error_text_is_what_then_fix():
    error = parse_error("DROP TABLE")
    assert str(error) == f"{error.what} — {error.fix}"


# parse_script


def test_parse_script_parses_every_statement_in_order():
    statements = parse_script(
        SALES_SOURCE + ";\n-- load\nINSERT INTO sales_source VALUES (1, 'a', 'b', 1.00, 'd');\n"
        "SELECT * FROM sales_source;\nDESC HISTORY sales_source"
    )
    assert [type(statement) for statement in statements] == [
        CreateTable,
        Dml,
        Query,
        DescribeHistory,
    ]


def test_parse_script_of_an_empty_script_is_empty():
    assert parse_script("-- nothing to do\n") == []


def test_parse_script_error_names_the_failing_statement():
    script = (
        "CREATE TABLE t (a INT);\nINSERT INTO t VALUES (1);\nCREATE TABLE u (a BLOB);\nSHOW TABLES"
    )
    with pytest.raises(StatementError) as caught:
        parse_script(script)
    assert caught.value.number == 3
    assert caught.value.what == "column a: unsupported type BLOB"
    assert isinstance(caught.value, LakeError)


def test_parse_script_counts_statements_not_comment_only_pieces():
    script = "-- intro\n;SELECT 1;\n/* note */;\nGRANT ALL ON t TO bob"
    with pytest.raises(StatementError) as caught:
        parse_script(script)
    assert caught.value.number == 2
    assert caught.value.what.startswith("not supported yet: GRANT")
