"""Top-N queries (`… ORDER BY o LIMIT n [OFFSET m]`): the rows ranked, kept in a hidden table,
and the top rows read from it. Each case of fixtures/top_n.sql gives a query, then the rows it
ranks, then the top rows as read from a table `ranked` of those rows."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.top import Ordering, TopN, top_n
from tests.dynamic_tables.analyses.cases import cases


def ranking(sql: str) -> TopN:
    found = top_n(sqlglot.parse_one(sql, read="spark"))
    assert isinstance(found, TopN), found
    return found


def visible(top: TopN) -> list[str]:
    """The ranked rows' own columns: the first branch's names, without the hidden ones."""
    query = top.rows
    while isinstance(query, exp.SetOperation):
        query = query.this
    assert isinstance(query, exp.Select)
    return [name for name in query.named_selects if name not in top.hidden]


@pytest.mark.parametrize(("sql", "expected"), cases("top_n.sql"))
def test_the_rows_ranked_and_the_top_rows_read_from_them(sql: str, expected: list[str]) -> None:
    top = ranking(sql)
    assert [top.rows.sql(dialect="spark"), top.top("ranked", visible(top))] == expected


def test_each_order_term_is_a_column_of_the_ranked_rows_with_spark_s_null_order() -> None:
    top = ranking(
        "SELECT a, b FROM t ORDER BY b DESC, a, a + b NULLS LAST, c DESC NULLS FIRST "
        "LIMIT 3 OFFSET 2"
    )
    assert top.order == (
        Ordering(1, descending=True, nulls_first=False),
        Ordering(0, descending=False, nulls_first=True),
        Ordering(2, descending=False, nulls_first=False),
        Ordering(3, descending=True, nulls_first=True),
    )
    assert top.hidden == ("__lake_order_0", "__lake_order_1")
    assert (top.limit.sql(), top.offset.sql() if top.offset else None) == ("3", "2")


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT a FROM t LIMIT 5", "LIMIT without ORDER BY keeps any rows: refreshed in full"),
        ("SELECT a FROM t ORDER BY a LIMIT 5 + 1", "LIMIT of an expression is refreshed in full"),
        ("SELECT a FROM t ORDER BY a LIMIT ALL", "LIMIT of an expression is refreshed in full"),
        (
            "SELECT * FROM t ORDER BY a LIMIT 3",
            "ORDER BY … LIMIT over this query is refreshed in full",
        ),
        (
            "SELECT a FROM t UNION SELECT a FROM u ORDER BY a + 1 LIMIT 3",
            "ORDER BY of an expression over a UNION is refreshed in full",
        ),
        (
            "SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY b LIMIT 3",
            "ORDER BY of an expression over a UNION is refreshed in full",
        ),
    ],
)
def test_a_top_n_that_cannot_be_kept_says_why(sql: str, reason: str) -> None:
    assert top_n(sqlglot.parse_one(sql, read="spark")) == reason


@pytest.mark.parametrize(
    "sql",
    ["SELECT a FROM t", "SELECT a FROM t ORDER BY a", "SELECT a FROM t UNION ALL SELECT a FROM u"],
)
def test_a_query_without_limit_is_no_top_n(sql: str) -> None:
    assert top_n(sqlglot.parse_one(sql, read="spark")) is None
