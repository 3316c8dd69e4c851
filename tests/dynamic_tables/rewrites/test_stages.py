"""Parts of a query read as tables of their own (stages): derived tables beside other tables or
ranked by a top-N, uncorrelated scalar subqueries, the groups a HAVING with a subquery filters,
and the groups of each grouping set. Each case of fixtures/stages.sql gives a query, then the
query over its stages, then each stage as `stage_N: its query` (stage_N for its hashed name)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot

from lake_assets.dynamic_tables.rewrites.stages import STAGE_PREFIX, Staged, stage_name, staged
from tests.dynamic_tables.fixture_cases import read_cases

FIXTURES = Path(__file__).parent / "fixtures"


def staged_sql(sql: str) -> Staged | None:
    return staged(sqlglot.parse_one(sql, read="spark"))


def written(found: Staged) -> list[str]:
    """The query and its parts as SQL, each stage named by its order of first appearance."""
    order = list(dict.fromkeys(name for name, _ in found.parts))

    def named(text: str) -> str:
        for number, name in enumerate(order, start=1):
            text = text.replace(name, f"stage_{number}")
        return text

    query = named(found.query.sql(dialect="spark"))
    return [query] + [named(f"{name}: {part.sql(dialect='spark')}") for name, part in found.parts]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param(case.given, case.expected, id=case.title)
        for case in read_cases(FIXTURES / "stages.sql")
    ],
)
def test_the_query_over_its_stages_and_each_stage(sql: str, expected: list[str]) -> None:
    found = staged_sql(sql)
    assert found is not None
    assert written(found) == expected


@pytest.mark.parametrize(
    "sql",
    [
        # nothing to stage
        "SELECT t.a FROM t",
        "SELECT t.a FROM t JOIN u ON t.k = u.k",
        "SELECT a FROM (SELECT t.a FROM t) s",  # a derived table alone is read where it stands
        "SELECT t.k, SUM(t.v) AS total FROM t GROUP BY t.k HAVING SUM(t.v) > 10",
        # a set operation, or a top-N (which stages the rows it ranks)
        "SELECT a FROM t UNION ALL SELECT a FROM u",
        "SELECT a FROM t ORDER BY a LIMIT 3",
        "SELECT a, SUM(x) AS s FROM t GROUP BY ROLLUP (a) ORDER BY s LIMIT 3",
        # subqueries that are no scalar: several rows, correlated, a column outside an
        # aggregate, tested by IN or EXISTS, two items, a LIMIT, a window
        "SELECT t.a FROM t WHERE t.v > (SELECT u.v FROM u)",
        "SELECT t.a FROM t WHERE t.v > (SELECT AVG(u.v) FROM u GROUP BY u.k)",
        "SELECT t.a FROM t WHERE t.v > (SELECT AVG(u.v) FROM u WHERE u.k = t.k)",
        "SELECT t.a FROM t WHERE t.v > (SELECT AVG(u.v) + u.w FROM u)",
        "SELECT t.a FROM t WHERE t.v IN (SELECT MAX(u.v) FROM u)",
        "SELECT t.a FROM t WHERE EXISTS (SELECT MAX(u.v) FROM u)",
        "SELECT t.a FROM t WHERE t.v > (SELECT MAX(u.v), MIN(u.v) FROM u)",
        "SELECT t.a FROM t WHERE t.v > (SELECT MAX(u.v) FROM u LIMIT 1)",
        "SELECT t.a FROM t WHERE t.v > (SELECT MAX(SUM(u.v)) OVER () FROM u)",
        # a HAVING whose subquery is no scalar, or beside a DISTINCT or QUALIFY
        "SELECT t.k, SUM(t.v) AS total FROM t GROUP BY t.k HAVING SUM(t.v) > (SELECT u.n FROM u)",
        "SELECT t.k, SUM(t.v) AS total FROM t GROUP BY t.k "
        "HAVING SUM(t.v) > (SELECT AVG(u.n) FROM u WHERE u.k = t.k)",
        "SELECT DISTINCT t.k FROM t GROUP BY t.k HAVING SUM(t.v) > (SELECT AVG(u.n) FROM u)",
        "SELECT t.k, SUM(t.v) AS total FROM t GROUP BY t.k "
        "QUALIFY RANK() OVER (ORDER BY SUM(t.v)) = 1 AND SUM(t.v) > (SELECT 1)",
        # a derived table whose columns have no names of their own to be read by
        "SELECT s.k FROM s JOIN (SELECT o.k, o.k FROM o) r ON s.k = r.k",
        "SELECT s.k FROM s JOIN (SELECT o.k FROM o) ON s.k = o.k",
        "SELECT s.k FROM s JOIN (SELECT o.k FROM o) r (x) ON s.k = r.x",
        "SELECT s.k FROM s JOIN (SELECT o.k, COUNT(*) FROM o GROUP BY o.k) r ON s.k = r.k",
        "SELECT r.k FROM (SELECT o.k, COUNT(*) FROM o GROUP BY o.k ORDER BY 2 LIMIT 3) r",
        # grouping sets beside a DISTINCT, a window, a HAVING with a subquery, or with an
        # item that is no grouping expression (which Spark refuses)
        "SELECT DISTINCT a FROM t GROUP BY ROLLUP (a)",
        "SELECT a, SUM(x) AS s, RANK() OVER (ORDER BY SUM(x)) AS r FROM t GROUP BY ROLLUP (a)",
        "SELECT a, SUM(x) AS s FROM t GROUP BY ROLLUP (a) HAVING SUM(x) > (SELECT 1)",
        "SELECT a, c, SUM(x) AS s FROM t GROUP BY ROLLUP (a)",
    ],
)
def test_no_stages_where_none_can_be_kept(sql: str) -> None:
    assert staged_sql(sql) is None


def test_a_stage_is_named_by_its_text() -> None:
    one = sqlglot.parse_one("SELECT AVG(u.v) AS x FROM u", read="spark")
    name = stage_name(one)
    assert re.fullmatch(f"{STAGE_PREFIX}[0-9a-f]{{12}}", name)
    assert stage_name(sqlglot.parse_one("select avg(u.v) as x from u", read="spark")) == name
    assert stage_name(sqlglot.parse_one("SELECT AVG(u.w) AS x FROM u", read="spark")) != name


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, SUM(x) FROM t GROUP BY ROLLUP (a)",
        "SELECT SUM(x), a FROM t GROUP BY GROUPING SETS ((a), ())",
        "SELECT t.k, SUM(t.v) FROM t GROUP BY t.k HAVING SUM(t.v) > (SELECT AVG(u.n) FROM u)",
        "SELECT SUM(t.v), t.k FROM t GROUP BY t.k HAVING SUM(t.v) > (SELECT AVG(u.n) FROM u)",
    ],
)
def test_an_item_without_a_name_of_its_own_is_not_rewritten_over_stages(sql: str) -> None:
    """Grouping sets and HAVING groups are read from stages by their items' names: an item
    without one has none to be read by (a scalar subquery's item needs none: see stages.sql)."""
    assert staged_sql(sql) is None
