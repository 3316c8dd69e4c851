"""Primary keys and clustering in the table statements' grammar: CREATE TABLE's key and CLUSTER BY
clauses, ALTER TABLE's SET / DROP PRIMARY KEY and CLUSTER BY, and OPTIMIZE, checked without
Spark."""

from __future__ import annotations

import pytest

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_script, parse_statement
from lake_assets.sql.grammar import StatementError
from lake_assets.tables.grammar import (
    AlterTableClustering,
    AlterTablePrimaryKey,
    AlterTableProperties,
    CreateTable,
    Optimize,
)

WIDE = ", ".join(f"c{number} INT" for number in range(1, 34))


def parse_error(text: str) -> LakeError:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    return caught.value


def test_a_table_level_key_keeps_the_columns_declared_spelling():
    statement = parse_statement(
        "CREATE TABLE IF NOT EXISTS Orders (OrderId BIGINT, Line INT, note STRING, "
        "PRIMARY KEY (orderid, LINE)) COMMENT 'lines'"
    )
    assert statement == CreateTable(
        name="orders",
        columns=(Column("OrderId", "BIGINT"), Column("Line", "INT"), Column("note", "STRING")),
        comment="lines",
        if_not_exists=True,
        primary_key=("OrderId", "Line"),
    )


def test_the_key_clause_may_stand_anywhere_among_the_columns():
    statement = parse_statement("CREATE TABLE t (a INT, primary key (b), b STRING)")
    assert isinstance(statement, CreateTable)
    assert [column.name for column in statement.columns] == ["a", "b"]
    assert statement.primary_key == ("b",)


def test_an_inline_key_on_one_column():
    statement = parse_statement("CREATE TABLE t (id BIGINT PRIMARY KEY COMMENT 'the id', x INT)")
    assert isinstance(statement, CreateTable)
    assert statement.columns[0] == Column("id", "BIGINT", "the id")
    assert statement.primary_key == ("id",)


def test_columns_named_primary_and_key_are_still_columns():
    statement = parse_statement("CREATE TABLE t (primary INT, key STRING, PRIMARY KEY (key))")
    assert isinstance(statement, CreateTable)
    assert [column.name for column in statement.columns] == ["primary", "key"]
    assert statement.primary_key == ("key",)


def test_a_table_without_a_key_has_the_empty_key():
    statement = parse_statement("CREATE TABLE t (a INT)")
    assert isinstance(statement, CreateTable)
    assert statement.primary_key == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER TABLE Sales SET PRIMARY KEY (Id, dt)", AlterTablePrimaryKey("sales", ("Id", "dt"))),
        ("alter table t set primary key (a)", AlterTablePrimaryKey("t", ("a",))),
        ("ALTER TABLE t DROP PRIMARY KEY", AlterTablePrimaryKey("t", ())),
        (
            "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')",
            AlterTableProperties("t", {"change_tracking": "true"}),
        ),
    ],
)
def test_alter_table_key_statements(text, expected):
    assert parse_statement(text) == expected


@pytest.mark.parametrize(
    ("text", "what", "fix"),
    [
        (
            "CREATE TABLE t (a INT, b STRING, PRIMARY KEY (a, c))",
            "primary key column c is not a column of table t",
            "choose among its columns: a, b",
        ),
        (
            "CREATE TABLE t (a INT, b STRING, PRIMARY KEY (a, b, A))",
            "column a appears twice in the primary key of table t",
            "name each key column once",
        ),
        (
            "CREATE TABLE t (a INT, b STRING, PRIMARY KEY (a), PRIMARY KEY (b))",
            "PRIMARY KEY is given twice in table t",
            "declare the key once: PRIMARY KEY (col, …) with all its columns",
        ),
        (
            "CREATE TABLE t (a INT PRIMARY KEY, b STRING PRIMARY KEY)",
            "PRIMARY KEY is given twice in table t",
            "declare the key once: PRIMARY KEY (col, …) with all its columns",
        ),
        (
            "CREATE TABLE t (a INT PRIMARY KEY, PRIMARY KEY (a))",
            "PRIMARY KEY is given twice in table t",
            "declare the key once: PRIMARY KEY (col, …) with all its columns",
        ),
        (
            "CREATE TABLE t (a INT, PRIMARY KEY ())",
            "the primary key of table t lists no column",
            "name its columns: PRIMARY KEY (col, …)",
        ),
        (
            "ALTER TABLE t SET PRIMARY KEY ()",
            "the primary key of table t lists no column",
            "name its columns: PRIMARY KEY (col, …)",
        ),
        (
            "ALTER TABLE t SET PRIMARY KEY (a, b, a)",
            "column a appears twice in the primary key of table t",
            "name each key column once",
        ),
    ],
)
def test_key_errors_say_what_and_how(text, what, fix):
    error = parse_error(text)
    assert (error.what, error.fix) == (what, fix)


def test_key_syntax_errors_quote_the_usage():
    error = parse_error("ALTER TABLE t SET PRIMARY KEY a")
    assert error.what == "syntax error: expected '(' but found 'a'"
    assert "SET PRIMARY KEY (col, …) | DROP PRIMARY KEY" in error.fix
    error = parse_error("ALTER TABLE t DROP PRIMARY KEY (a)")
    assert error.what == "syntax error: expected the end of the statement but found '('"
    error = parse_error("CREATE TABLE t (a INT, PRIMARY KEY (a,))")
    assert error.what == "syntax error: expected a key column name but found ')'"
    assert "[, PRIMARY KEY (col, …)]" in error.fix


def test_other_alterations_stay_unsupported():
    error = parse_error("ALTER TABLE t SWAP WITH u")
    assert error.what == "not supported yet: ALTER TABLE T …"


def test_a_bad_key_stops_the_script_before_anything_runs():
    with pytest.raises(StatementError) as raised:
        parse_script("CREATE TABLE a (x INT); CREATE TABLE b (y INT, PRIMARY KEY (x))")
    assert raised.value.number == 2
    assert raised.value.what == "primary key column x is not a column of table b"


@pytest.mark.parametrize(
    "text",
    [
        "CREATE TABLE Events (Id BIGINT, Kind STRING, at DATE) CLUSTER BY (kind, ID) COMMENT 'e'",
        "create table events (Id BIGINT, Kind STRING, at DATE) comment 'e' cluster  by (kind, ID)",
    ],
)
def test_cluster_by_and_comment_follow_the_columns_in_either_order(text):
    assert parse_statement(text) == CreateTable(
        name="events",
        columns=(Column("Id", "BIGINT"), Column("Kind", "STRING"), Column("at", "DATE")),
        comment="e",
        cluster_by=("Kind", "Id"),
    )


def test_a_table_is_keyed_and_clustered_by_different_columns():
    statement = parse_statement(
        "CREATE TABLE IF NOT EXISTS t (a INT PRIMARY KEY, b STRING) CLUSTER BY (b)"
    )
    assert isinstance(statement, CreateTable)
    assert (statement.primary_key, statement.cluster_by, statement.comment) == (
        ("a",),
        ("b",),
        None,
    )


def test_a_table_without_cluster_by_is_not_clustered():
    statement = parse_statement("CREATE TABLE t (a INT) COMMENT 'x'")
    assert isinstance(statement, CreateTable)
    assert statement.cluster_by == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER TABLE Sales CLUSTER BY (Id, dt)", AlterTableClustering("sales", ("Id", "dt"))),
        ("alter table t cluster by (a)", AlterTableClustering("t", ("a",))),
        ("ALTER TABLE t CLUSTER BY NONE", AlterTableClustering("t", ())),
        ("OPTIMIZE Sales", Optimize("sales")),
        ("optimize t", Optimize("t")),
        ("OPTIMIZE t full", Optimize("t", full=True)),
    ],
)
def test_alter_table_cluster_by_and_optimize(text, expected):
    assert parse_statement(text) == expected


@pytest.mark.parametrize(
    ("text", "what", "fix"),
    [
        (
            "CREATE TABLE t (a INT, b STRING) CLUSTER BY (a, c)",
            "clustering column c is not a column of table t",
            "choose among its columns: a, b",
        ),
        (
            "CREATE TABLE t (a INT, b STRING) CLUSTER BY (a, b, A)",
            "column a appears twice in the clustering of table t",
            "name each clustering column once",
        ),
        (
            "ALTER TABLE t CLUSTER BY (a, b, a)",
            "column a appears twice in the clustering of table t",
            "name each clustering column once",
        ),
        (
            "CREATE TABLE t (a INT) CLUSTER BY ()",
            "the clustering of table t lists no column",
            "name its columns: CLUSTER BY (col, …)",
        ),
        (
            "ALTER TABLE t CLUSTER BY ()",
            "the clustering of table t lists no column",
            "name its columns: CLUSTER BY (col, …)",
        ),
        (
            "ALTER TABLE t CLUSTER BY (a, b, c, d, e)",
            "the clustering of table t lists 5 columns: files are clustered by 4 at most",
            "cluster by the 4 columns its readers filter or join on most",
        ),
        (
            "CREATE TABLE t (a INT, ok BOOLEAN) CLUSTER BY (OK)",
            "clustering column ok of table t is BOOLEAN: files are clustered by numbers, strings, "
            "dates and timestamps only",
            "cluster the table by columns of those types",
        ),
        (
            "CREATE TABLE t (a INT, raw BINARY) CLUSTER BY (a, raw)",
            "clustering column raw of table t is BINARY: files are clustered by numbers, strings, "
            "dates and timestamps only",
            "cluster the table by columns of those types",
        ),
        (
            f"CREATE TABLE t ({WIDE}) CLUSTER BY (c33)",
            "clustering column c33 of table t is its column 33: files are clustered by the "
            "statistics Delta keeps for the first 32 columns only",
            "cluster the table by columns among its first 32",
        ),
    ],
)
def test_clustering_errors_say_what_and_how(text, what, fix):
    error = parse_error(text)
    assert (error.what, error.fix) == (what, fix)


def test_clustering_syntax_errors_quote_the_usage():
    error = parse_error("CREATE TABLE t (a INT) CLUSTER BY (a) CLUSTER BY (a)")
    assert error.what == "syntax error: expected the end of the statement but found 'CLUSTER BY'"
    assert "[CLUSTER BY (col, …)] [COMMENT '…']" in error.fix
    error = parse_error("CREATE TABLE t (a INT) CLUSTER BY NONE")
    assert error.what == "syntax error: expected '(' but found 'NONE'"
    error = parse_error("ALTER TABLE t CLUSTER BY a")
    assert error.what == "syntax error: expected '(' but found 'a'"
    assert "| CLUSTER BY (col, …) | CLUSTER BY NONE |" in error.fix
    error = parse_error("ALTER TABLE t CLUSTER BY NONE (a)")
    assert error.what == "syntax error: expected the end of the statement but found '('"
    error = parse_error("OPTIMIZE t ZORDER BY (a)")
    assert (error.what, error.fix) == (
        "syntax error: expected the end of the statement but found 'ZORDER'",
        "write it as OPTIMIZE name [FULL]",
    )
    error = parse_error("OPTIMIZE")
    assert error.what == "syntax error: expected a table name but found the end of the statement"


def test_a_bad_clustering_stops_the_script_before_anything_runs():
    with pytest.raises(StatementError) as raised:
        parse_script("CREATE TABLE a (x INT); OPTIMIZE a; ALTER TABLE a CLUSTER BY (x, X)")
    assert raised.value.number == 3
    assert raised.value.what == "column x appears twice in the clustering of table a"
