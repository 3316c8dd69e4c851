"""The parser's table statements: CREATE TABLE, its types and refusals; DROP, ALTER, DESC, SHOW."""

from __future__ import annotations

import pytest

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.tables.grammar import (
    AlterTableProperties,
    CreateTable,
    DescribeHistory,
    DescribeTable,
    DropTable,
    ShowTables,
)
from tests.sql.grammar_helpers import SALES_SOURCE, parse_error


def column_type(type_text: str) -> str:
    statement = parse_statement(f"CREATE TABLE t (c {type_text})")
    assert isinstance(statement, CreateTable)
    return statement.columns[0].type


# CREATE TABLE


def test_create_table_of_sales_source_with_its_comments():
    assert parse_statement(SALES_SOURCE) == CreateTable(
        name="sales_source",
        columns=(
            Column("id", "BIGINT", "Order ID"),
            Column("product", "STRING", "Product name"),
            Column("category", "STRING", "Category"),
            Column("amount", "DECIMAL(10,2)", "Amount"),
            Column("dt", "STRING", "Date"),
        ),
        comment="Data lake acceleration test source table",
        if_not_exists=True,
    )


def test_create_table_without_if_not_exists_or_comments():
    assert parse_statement("CREATE TABLE t (a INT, b STRING)") == CreateTable(
        name="t",
        columns=(Column("a", "INT"), Column("b", "STRING")),
        comment=None,
        if_not_exists=False,
    )


def test_create_table_keywords_are_case_insensitive():
    statement = parse_statement("create table if not exists t (a int comment 'x') comment 'y'")
    assert statement == CreateTable("t", (Column("a", "INT", "x"),), "y", True)


def test_create_table_lower_cases_the_table_name_but_keeps_column_case():
    statement = parse_statement("CREATE TABLE Sales (OrderId BIGINT, productName STRING)")
    assert isinstance(statement, CreateTable)
    assert statement.name == "sales"
    assert [column.name for column in statement.columns] == ["OrderId", "productName"]


def test_create_table_accepts_backquoted_names():
    statement = parse_statement("CREATE TABLE `Select` (`Order Id` BIGINT, `select` STRING)")
    assert isinstance(statement, CreateTable)
    assert statement.name == "select"
    assert [column.name for column in statement.columns] == ["Order Id", "select"]


def test_backquotes_quote_a_reserved_word_but_do_not_widen_the_name_rule():
    with pytest.raises(LakeError, match="'My Sales' cannot be a table name"):
        parse_statement("CREATE TABLE `My Sales` (a INT)")


def test_create_table_concatenates_adjacent_comment_literals():
    statement = parse_statement("CREATE TABLE t (a INT COMMENT 'one ' 'two') COMMENT 'x' 'y'")
    assert isinstance(statement, CreateTable)
    assert statement.columns[0].comment == "one two"
    assert statement.comment == "xy"


@pytest.mark.parametrize(
    ("written", "spark"),
    [
        ("INT", "INT"),
        ("INTEGER", "INT"),
        ("BIGINT", "BIGINT"),
        ("SMALLINT", "SMALLINT"),
        ("TINYINT", "TINYINT"),
        ("DECIMAL(10,2)", "DECIMAL(10,2)"),
        ("DECIMAL(38, 38)", "DECIMAL(38,38)"),
        ("DECIMAL(1)", "DECIMAL(1,0)"),
        ("DECIMAL", "DECIMAL(10,0)"),
        ("NUMERIC(5)", "DECIMAL(5,0)"),
        ("NUMERIC(7,3)", "DECIMAL(7,3)"),
        ("DEC(4,1)", "DECIMAL(4,1)"),
        ("STRING", "STRING"),
        ("VARCHAR(64)", "VARCHAR(64)"),
        ("VARCHAR", "STRING"),
        ("CHAR(3)", "CHAR(3)"),
        ("CHAR", "CHAR(1)"),
        ("BOOLEAN", "BOOLEAN"),
        ("DOUBLE", "DOUBLE"),
        ("FLOAT", "FLOAT"),
        ("DATE", "DATE"),
        ("TIMESTAMP", "TIMESTAMP"),
        ("TIMESTAMP_NTZ", "TIMESTAMP_NTZ"),
        ("BINARY", "BINARY"),
        ("bigint", "BIGINT"),
        ("decimal(10,2)", "DECIMAL(10,2)"),
    ],
)
def test_create_table_maps_every_supported_type(written, spark):
    assert column_type(written) == spark


def test_create_table_rejects_an_unsupported_type():
    error = parse_error("CREATE TABLE t (id BIGINT, tags ARRAY<STRING>)")
    assert error.what == "column tags: unsupported type ARRAY"
    assert "DECIMAL(p,s)" in error.fix
    assert "TIMESTAMP_NTZ" in error.fix


def test_create_table_rejects_a_column_without_a_type():
    error = parse_error("CREATE TABLE t (a)")
    assert "column a: unsupported type" in error.what


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("DECIMAL(40,2)", "DECIMAL(40,2)"),
        ("DECIMAL(0)", "DECIMAL(0,0)"),
        ("DECIMAL(5,6)", "DECIMAL(5,6)"),
    ],
)
def test_create_table_rejects_a_decimal_out_of_range(written, shown):
    error = parse_error(f"CREATE TABLE t (amount {written})")
    assert error.what == f"column amount: {shown} is out of range"
    assert "precision from 1 to 38" in error.fix


def test_create_table_rejects_a_zero_length_varchar():
    error = parse_error("CREATE TABLE t (name VARCHAR(0))")
    assert error.what == "column name: VARCHAR length must be at least 1"


def test_create_table_rejects_a_duplicate_column_whatever_its_case():
    error = parse_error("CREATE TABLE t (id INT, name STRING, ID BIGINT)")
    assert error.what == "column id appears twice in table t"
    assert error.fix == "give every column a distinct name"


def test_create_table_missing_close_paren_is_a_syntax_error_with_usage():
    error = parse_error("CREATE TABLE t (a INT, b STRING")
    assert error.what == "syntax error: expected ')' but found the end of the statement"
    assert error.fix.startswith("write it as CREATE TABLE [IF NOT EXISTS] name (")


def test_create_table_names_the_unexpected_token():
    error = parse_error("CREATE TABLE t (a INT) extra")
    assert error.what == "syntax error: expected the end of the statement but found 'extra'"
    assert "write it as CREATE TABLE" in error.fix


def test_create_table_rejects_a_schema_qualified_name():
    error = parse_error("CREATE TABLE a.b (x INT)")
    assert error.what == "'a.' names a schema, and schemas are not supported yet"
    assert "bare name" in error.fix


def test_create_table_with_unterminated_comment_quote():
    error = parse_error("CREATE TABLE t (a INT COMMENT 'oops)")
    assert "cannot read the SQL text" in error.what


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("CREATE MATERIALIZED VIEW v AS SELECT 1", "CREATE MATERIALIZED VIEW"),
        ("GRANT SELECT ON t TO alice", "GRANT SELECT ON"),
        ("DROP SCHEMA s", "DROP SCHEMA S"),
        ("SHOW SCHEMAS", "SHOW SCHEMAS"),
        ("ALTER TABLE t SWAP WITH u", "ALTER TABLE T"),
        ("SELEC 1", "SELEC 1"),
    ],
)
def test_unknown_statements_are_not_supported_yet(text, words):
    error = parse_error(text)
    assert error.what == f"not supported yet: {words} …"
    assert "SQL reference" in error.fix


# DROP, ALTER, DESC, SHOW


def test_drop_table():
    assert parse_statement("DROP TABLE Sales") == DropTable("sales", if_exists=False)


def test_drop_table_if_exists():
    assert parse_statement("drop table if exists t") == DropTable("t", if_exists=True)


def test_drop_table_without_a_name_is_a_syntax_error():
    error = parse_error("DROP TABLE")
    assert error.what == "syntax error: expected a table name but found the end of the statement"
    assert error.fix == "write it as DROP TABLE [IF EXISTS] name"


def test_alter_table_set_properties_lower_cases_keys_only():
    statement = parse_statement(
        "ALTER TABLE Sales SET PROPERTIES ('Change_Tracking' = 'true', 'note' = 'Keep Case')"
    )
    assert statement == AlterTableProperties(
        "sales", {"change_tracking": "true", "note": "Keep Case"}
    )


def test_alter_table_properties_need_quoted_keys():
    error = parse_error("ALTER TABLE t SET PROPERTIES (change_tracking = 'true')")
    assert error.what == (
        "syntax error: expected a quoted property name but found 'change_tracking'"
    )
    assert "SET PROPERTIES ('change_tracking' = 'true')" in error.fix


@pytest.mark.parametrize("text", ["DESC t", "DESC TABLE t", "DESCRIBE t", "describe table T"])
def test_describe_table(text):
    assert parse_statement(text) == DescribeTable("t")


def test_describe_history():
    assert parse_statement("DESC HISTORY Sales") == DescribeHistory("sales")


def test_describe_a_table_named_history():
    assert parse_statement("DESC history") == DescribeTable("history")


def test_describe_history_of_a_table_named_history():
    assert parse_statement("DESC HISTORY history") == DescribeHistory("history")


def test_show_tables():
    assert parse_statement("show tables") == ShowTables()


def test_show_tables_takes_no_arguments():
    error = parse_error("SHOW TABLES LIKE 'x'")
    assert error.what == "syntax error: expected the end of the statement but found 'LIKE'"
