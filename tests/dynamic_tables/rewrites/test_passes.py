"""Each rewrite pass on its own, and the whole chain (runnable), on the cases of
fixtures/<pass>.sql (see tests/dynamic_tables/fixture_cases.py), so that a pass is checked
without Spark: each input and the statement it rewrites to are compared as Spark SQL, so their
layout does not matter."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from lake_assets.dynamic_tables.rewrites import PASSES, Columns, Pass, notes, runnable
from tests.dynamic_tables.fixture_cases import read_cases

FIXTURES = Path(__file__).parent / "fixtures"
BY_NAME: dict[str, Pass] = {rewrite.__name__: rewrite for rewrite in PASSES}


def chain(expression: sqlglot.exp.Expr, **context: Columns) -> sqlglot.exp.Expr:
    return runnable(expression, context.get("columns"))


def cases(name: str) -> list[pytest.ParameterSet]:
    """The cases of fixtures/`name`.sql: (input, expected, columns), named by their titles."""
    found = read_cases(FIXTURES / f"{name}.sql")
    assert all(len(case.expected) == 1 for case in found), f"{name}: an input and its rewrite"
    return [
        pytest.param(case.given, case.expected[0], case.columns, id=case.title) for case in found
    ]


def spark(sql: str) -> str:
    return sqlglot.parse_one(sql, read="spark").sql(dialect="spark")


def test_every_pass_has_its_fixture_file_and_every_file_its_pass() -> None:
    files = {path.stem for path in FIXTURES.glob("*.sql")}
    assert files == {*BY_NAME, "runnable", "stages"}  # stages: see test_stages


@pytest.mark.parametrize(
    ("name", "sql", "expected", "given"),
    [
        pytest.param(name, *case.values, id=f"{name}: {case.id}")
        for name in (*BY_NAME, "runnable")
        for case in cases(name)
    ],
)
def test_each_pass_and_the_chain_rewrite_their_cases(
    name: str, sql: str, expected: str, given: Columns
) -> None:
    """Only the pass named runs on the input (`runnable`: all of them, in order)."""
    rewrite = BY_NAME.get(name, chain)
    query = sqlglot.parse_one(sql, read="spark")
    before = query.sql(dialect="spark")
    assert rewrite(query, columns=given).sql(dialect="spark") == spark(expected)
    assert query.sql(dialect="spark") == before, "a pass rewrites a copy"


IGNORED = "ORDER BY is ignored: a table's rows have no order; sort when you query it"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a, b FROM t ORDER BY b DESC", (IGNORED,)),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY a", (IGNORED,)),
        ("SELECT a FROM t ORDER BY a LIMIT 5", ()),
        ("SELECT a FROM t ORDER BY a OFFSET 5", ()),
        ("SELECT d.a FROM (SELECT t.a FROM t ORDER BY t.a) AS d", ()),
        ("SELECT a FROM t", ()),
    ],
)
def test_notes_say_an_order_by_that_only_sorts_is_ignored(
    sql: str, expected: tuple[str, ...]
) -> None:
    assert notes(sqlglot.parse_one(sql, read="spark")) == expected


def test_a_join_built_without_a_kind_is_a_cross_join_before_the_semi_join() -> None:
    """A query built rather than parsed may hold `FROM a, b` as a join of no kind, which a
    semi join after it would bind to b alone."""
    query = sqlglot.select("a.x").from_("a").join("b").where("a.k = b.k")
    query = query.where("EXISTS (SELECT 1 FROM d WHERE d.k = a.k)")
    assert query.sql(dialect="spark").startswith("SELECT a.x FROM a, b WHERE")
    assert BY_NAME["decorrelate"](query).sql(dialect="spark") == (
        "SELECT a.x FROM a CROSS JOIN b LEFT SEMI JOIN d AS d ON d.k = a.k WHERE a.k = b.k"
    )
