"""ROLLUP, CUBE and GROUPING SETS as the grouping sets they mean, and an item or a HAVING as it
reads for the groups of one set. Each case of fixtures/grouping_sets.sql gives a query, then its
sets as one GROUPING SETS clause, then the expressions in the order GROUPING_ID() counts them."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.grouping_sets import Sets, grouping_sets, in_set
from tests.dynamic_tables.analyses.cases import cases


def text(expression: exp.Expr) -> str:
    return expression.sql(dialect="spark")


def sets_of(sql: str) -> tuple[exp.Select, Sets]:
    query = sqlglot.parse_one(sql, read="spark")
    assert isinstance(query, exp.Select)
    found = grouping_sets(query)
    assert found is not None
    return query, found


@pytest.mark.parametrize(("sql", "expected"), cases("grouping_sets.sql"))
def test_the_grouping_sets_a_group_by_means(sql: str, expected: list[str]) -> None:
    found = sets_of(sql)[1]
    listed = ", ".join("(" + ", ".join(map(text, chosen)) + ")" for chosen in found.sets)
    counted = ", ".join(map(text, found.expressions))
    assert [f"GROUPING SETS ({listed})", f"GROUPING_ID({counted})"] == expected


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, COUNT(*) AS n FROM t",
        "SELECT a, COUNT(*) AS n FROM t GROUP BY a",
        "SELECT a, b, COUNT(*) AS n FROM t GROUP BY a, b",
    ],
)
def test_a_plain_group_by_has_no_grouping_sets(sql: str) -> None:
    assert grouping_sets(sqlglot.parse_one(sql, read="spark")) is None


ROLLUP = (
    "SELECT upper(a) AS u, b, SUM(x) AS s, GROUPING_ID() AS g, GROUPING(b) AS gb, "
    "GROUPING_ID(b, a) AS ba FROM t GROUP BY ROLLUP (a, b) HAVING SUM(x) > 1 AND b IS NOT NULL"
)


@pytest.mark.parametrize(
    ("item", "by_set"),
    [
        # a grouping expression is its key in the sets that hold it, NULL in the others
        (0, ["UPPER(k0)", "UPPER(k0)", "UPPER(NULL)"]),
        (1, ["k1", "NULL", "NULL"]),
        # an aggregate is left to be folded
        (2, ["SUM(x)", "SUM(x)", "SUM(x)"]),
        # GROUPING_ID() counts every expression, the first the highest bit; GROUPING() one
        (3, ["CAST(0 AS BIGINT)", "CAST(1 AS BIGINT)", "CAST(3 AS BIGINT)"]),
        (4, ["CAST(0 AS TINYINT)", "CAST(1 AS TINYINT)", "CAST(1 AS TINYINT)"]),
        (5, ["CAST(0 AS BIGINT)", "CAST(2 AS BIGINT)", "CAST(3 AS BIGINT)"]),
    ],
)
def test_an_item_for_the_groups_of_each_set(item: int, by_set: list[str]) -> None:
    query, found = sets_of(ROLLUP)
    expression = query.selects[item].unalias()
    keys = [exp.column(f"k{index}") for index in range(len(found.expressions))]
    assert [text(in_set(expression, found, chosen, keys)) for chosen in found.sets] == by_set


def test_a_having_for_the_groups_of_each_set() -> None:
    query, found = sets_of(ROLLUP)
    having = query.args["having"].this
    keys = [exp.column(f"k{index}") for index in range(len(found.expressions))]
    assert [text(in_set(having, found, chosen, keys)) for chosen in found.sets] == [
        "SUM(x) > 1 AND NOT k1 IS NULL",
        "SUM(x) > 1 AND NOT NULL IS NULL",
        "SUM(x) > 1 AND NOT NULL IS NULL",
    ]


def test_a_set_reads_its_keys_by_their_position_in_the_set() -> None:
    """CUBE's set (b) reads b as the set's first key."""
    query, found = sets_of("SELECT a, b, COUNT(*) AS n FROM t GROUP BY CUBE (a, b)")
    keys = [exp.column("first"), exp.column("second")]
    assert [
        [text(in_set(item.unalias(), found, chosen, keys)) for item in query.selects[:2]]
        for chosen in found.sets
    ] == [["first", "second"], ["first", "NULL"], ["NULL", "first"], ["NULL", "NULL"]]


def test_a_set_leaves_the_original_expression_untouched() -> None:
    query, found = sets_of(ROLLUP)
    before = text(query)
    in_set(query.selects[0].unalias(), found, found.sets[2], [exp.column("k0")])
    assert text(query) == before
