"""CREATE TABLE … AS SELECT on real Spark + Delta: one commit with the query's columns and rows,
a column without a name and a stream refused in one line."""

from __future__ import annotations

from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession
from lake_assets.tables.grammar import CreateTableAs
from tests.ingest_helpers import message, refused, rows


def test_a_table_made_from_a_query(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (id INT, a DECIMAL(10,2), b STRING);"
        "INSERT INTO t VALUES (1, 1.5, 'x'), (2, 2.5, 'y')"
    )
    assert message(
        lake, "CREATE TABLE u COMMENT 'doubled' AS SELECT id, a * 2 AS a2, upper(b) AS b FROM t"
    ) == ("created table u with 2 rows")
    assert [row[:2] for row in rows(lake, "DESC u")] == [
        ("id", "INT"),
        ("a2", "DECIMAL(12,2)"),
        ("b", "STRING"),
    ]
    assert [(row[0], row[2], row[3]) for row in rows(lake, "DESC HISTORY u")] == [
        (0, "CREATE TABLE AS SELECT", 2)
    ]
    assert rows(lake, "SHOW TABLES")[1][5:8] == (2, 0, "doubled")
    assert refused(lake, "CREATE TABLE w AS SELECT COUNT(*) FROM t") == (
        "the query's column count(1) needs a name to be a column of table w — name it with AS, "
        "e.g. COUNT(*) AS orders"
    )
    lake.sql("CREATE STREAM s ON TABLE t")
    assert refused(lake, "CREATE TABLE w AS SELECT * FROM s").startswith(
        "CREATE TABLE w AS SELECT reads a stream"
    )
    assert message(lake, "CREATE TABLE IF NOT EXISTS u AS SELECT 1 AS x") == (
        "table u already exists; nothing to do"
    )


def test_create_table_as_parses_with_a_comment() -> None:
    statement = parse_statement("CREATE TABLE IF NOT EXISTS U COMMENT 'c' AS SELECT 1 AS x")
    assert isinstance(statement, CreateTableAs)
    assert (statement.name, statement.comment, statement.if_not_exists) == ("u", "c", True)
