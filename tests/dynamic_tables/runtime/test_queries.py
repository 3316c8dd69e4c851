"""The SQL the operators build over their sources, without Spark."""

from __future__ import annotations

import sqlglot

from lake_assets.dynamic_tables.runtime.queries import read_where


def test_a_table_read_where_a_predicate_holds_keeps_its_alias_and_its_outer_join() -> None:
    """The predicate filters the NULL-extended side's scan, not the join's rows: an order
    without lines in the range keeps its row."""
    query = sqlglot.parse_one(
        "SELECT o.k, l.n FROM orders AS o LEFT JOIN lines AS l ON l.k = o.k WHERE o.d > 1",
        dialect="spark",
    )
    limited = read_where(query, "l", "l.k BETWEEN 10 AND 20")
    assert limited.sql(dialect="spark") == (
        "SELECT o.k, l.n FROM orders AS o LEFT JOIN "
        "(SELECT * FROM lines AS l WHERE l.k BETWEEN 10 AND 20) AS l ON l.k = o.k WHERE o.d > 1"
    )
    assert query.sql(dialect="spark").count("BETWEEN") == 0  # the query itself is untouched


def test_a_table_without_alias_and_one_in_a_subquery() -> None:
    query = sqlglot.parse_one(
        "SELECT orders.k FROM orders WHERE EXISTS (SELECT 1 FROM lines WHERE lines.k = orders.k)",
        dialect="spark",
    )
    limited = read_where(query, "lines", "lines.k IN (1, 2)")
    assert limited.sql(dialect="spark") == (
        "SELECT orders.k FROM orders WHERE EXISTS(SELECT 1 FROM "
        "(SELECT * FROM lines WHERE lines.k IN (1, 2)) AS lines WHERE lines.k = orders.k)"
    )
