"""Which subqueries a dynamic table runs as semi and anti joins, and which it leaves as written."""

from __future__ import annotations

import pytest
import sqlglot

from lake_assets.dynamic_tables.subqueries import (
    decorrelated,
    distinct_aliases,
    inlined,
    merged,
)


def rewritten(sql: str) -> str:
    return decorrelated(distinct_aliases(sqlglot.parse_one(sql, read="spark"))).sql(dialect="spark")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT s.id FROM src s WHERE s.qty > 0 AND EXISTS "
            "(SELECT 1 FROM dim d WHERE d.cat = s.cat AND d.weight > 1)",
            "SELECT s.id FROM src AS s LEFT SEMI JOIN dim AS d ON d.cat = s.cat AND d.weight > 1 "
            "WHERE s.qty > 0",
        ),
        (
            "SELECT s.id FROM src s WHERE NOT EXISTS (SELECT * FROM dim WHERE dim.cat = s.cat)",
            "SELECT s.id FROM src AS s LEFT ANTI JOIN dim AS dim ON dim.cat = s.cat",
        ),
        (
            "SELECT s.id FROM src s WHERE s.cat IN (SELECT d.cat FROM dim d WHERE d.weight > 1)",
            "SELECT s.id FROM src AS s LEFT SEMI JOIN dim AS d ON s.cat = d.cat AND d.weight > 1",
        ),
        (  # a comma join would bind the semi join to its last table alone
            "SELECT a.x FROM a, b WHERE a.k = b.k AND EXISTS (SELECT 1 FROM d WHERE d.k = a.k)",
            "SELECT a.x FROM a CROSS JOIN b LEFT SEMI JOIN d AS d ON d.k = a.k WHERE a.k = b.k",
        ),
        (  # inside the subquery its table's name hides the outer one's
            "SELECT src.id FROM src WHERE EXISTS (SELECT 1 FROM dim WHERE dim.k = src.k) "
            "AND NOT EXISTS (SELECT 1 FROM dim WHERE dim.k = src.k AND dim.x IS NULL)",
            "SELECT src.id FROM src LEFT SEMI JOIN dim AS dim ON dim.k = src.k "
            "LEFT ANTI JOIN dim AS dim_2 ON dim_2.k = src.k AND dim_2.x IS NULL",
        ),
    ],
)
def test_exists_and_in_become_semi_and_anti_joins(sql: str, expected: str) -> None:
    assert rewritten(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT s.id FROM src s WHERE s.cat NOT IN (SELECT d.cat FROM dim d)",  # NULLs
        "SELECT s.id FROM src s WHERE EXISTS (SELECT 1 FROM dim d WHERE cat = s.cat)",
        "SELECT s.id FROM src s WHERE EXISTS (SELECT 1 FROM dim d WHERE d.cat = s.cat LIMIT 1)",
        "SELECT s.id FROM src s WHERE s.a > 1 OR EXISTS (SELECT 1 FROM d WHERE d.k = s.k)",
        "SELECT s.id FROM src s WHERE EXISTS (SELECT 1 FROM d JOIN e ON d.k = e.k)",
        "SELECT s.id FROM src s WHERE s.k IN (SELECT MAX(d.k) FROM d)",
    ],
)
def test_other_subqueries_stay_as_written(sql: str) -> None:
    assert rewritten(sql) == sqlglot.parse_one(sql, read="spark").sql(dialect="spark")


def test_a_derived_table_that_tests_subqueries_is_merged_as_the_whole_from() -> None:
    """Its subqueries keep reading what they read (its tables, under the same names); beside
    a join such a derived table stays, as a correlation could then name the other FROM item."""
    sql = (
        "SELECT code, COUNT(*) AS n FROM (SELECT SUBSTRING(c.phone, 1, 2) AS code FROM c "
        "WHERE c.bal > (SELECT AVG(c2.bal) FROM c c2) AND NOT EXISTS "
        "(SELECT * FROM o WHERE o.k = c.k)) AS sale GROUP BY code"
    )
    assert merged(sqlglot.parse_one(sql, read="spark")).sql(dialect="spark") == (
        "SELECT (SUBSTRING(c.phone, 1, 2)) AS code, COUNT(*) AS n FROM c "
        "WHERE c.bal > (SELECT AVG(c2.bal) FROM c AS c2) "
        "AND NOT EXISTS(SELECT * FROM o WHERE o.k = c.k) GROUP BY (SUBSTRING(c.phone, 1, 2))"
    )
    beside = "SELECT s.a, t.b FROM (SELECT c.a FROM c WHERE EXISTS (SELECT 1 FROM o)) s JOIN t"
    query = sqlglot.parse_one(beside, read="spark")
    assert merged(query).sql(dialect="spark") == query.sql(dialect="spark")


def test_a_derived_table_that_only_projects_is_merged_and_names_stay() -> None:
    """Outer items keep their names (a bare column is aliased by it); conditions of both levels
    are ANDed; an unnamed outer expression would change its name, so such a query stays."""
    sql = (
        "SELECT nation, SUM(volume) AS revenue FROM (SELECT n.n_name AS nation, "
        "l.price * (1 - l.discount) AS volume FROM lineitem l, nation n "
        "WHERE l.nk = n.nk) AS shipping WHERE volume > 0 GROUP BY nation"
    )
    assert merged(sqlglot.parse_one(sql, read="spark")).sql(dialect="spark") == (
        "SELECT n.n_name AS nation, SUM((l.price * (1 - l.discount))) AS revenue "
        "FROM lineitem AS l CROSS JOIN nation AS n WHERE l.nk = n.nk "
        "AND (l.price * (1 - l.discount)) > 0 GROUP BY n.n_name"
    )
    for kept in (
        "SELECT nation, SUM(volume) FROM (SELECT n_name AS nation, x AS volume FROM t) s "
        "GROUP BY nation",
        "SELECT c, COUNT(*) AS n FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k) s GROUP BY c",
        "SELECT * FROM (SELECT a FROM t) s",
    ):
        expression = sqlglot.parse_one(kept, read="spark")
        assert merged(expression).sql(dialect="spark") == expression.sql(dialect="spark")


def test_a_subquery_table_under_an_outer_alias_gets_its_own_at_every_depth() -> None:
    sql = (
        "SELECT t.a FROM t WHERE t.b < (SELECT AVG(t.b) FROM t WHERE t.k = 1 AND EXISTS "
        "(SELECT 1 FROM t, u WHERE t.k = u.k)) AND t.c IN (SELECT u.c FROM u)"
    )
    assert distinct_aliases(sqlglot.parse_one(sql, read="spark")).sql(dialect="spark") == (
        "SELECT t.a FROM t WHERE t.b < (SELECT AVG(t_2.b) FROM t AS t_2 WHERE t_2.k = 1 AND "
        "EXISTS(SELECT 1 FROM t AS t_3 CROSS JOIN u AS u_2 WHERE t_3.k = u_2.k)) AND t.c IN "
        "(SELECT u.c FROM u)"
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "WITH r (k, n) AS (SELECT t.a, SUM(t.b) FROM t GROUP BY t.a), "
            "s AS (SELECT r.k FROM r WHERE r.n > 1) SELECT s.k FROM s JOIN s AS z ON s.k = z.k",
            "SELECT s.k FROM (SELECT r.k FROM (SELECT t.a, SUM(t.b) FROM t GROUP BY t.a) "
            "AS r(k, n) WHERE r.n > 1) AS s JOIN (SELECT r.k FROM (SELECT t.a, SUM(t.b) FROM t "
            "GROUP BY t.a) AS r(k, n) WHERE r.n > 1) AS z ON s.k = z.k",
        ),
        ("SELECT a FROM t", "SELECT a FROM t"),
    ],
)
def test_ctes_are_inlined_as_the_derived_tables_they_stand_for(sql: str, expected: str) -> None:
    assert inlined(sqlglot.parse_one(sql, read="spark")).sql(dialect="spark") == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT f.x, f.yy, u.z FROM (SELECT t.x, t.y * 2 AS yy FROM t WHERE t.y > 0) AS f "
            "JOIN u ON f.x = u.x WHERE f.yy < 10",
            "SELECT f.x AS x, (f.y * 2) AS yy, u.z AS z FROM t AS f JOIN u ON f.x = u.x "
            "WHERE (f.y * 2) < 10 AND f.y > 0",
        ),
        (
            "SELECT g.x FROM (SELECT f.x FROM (SELECT t.x FROM t WHERE t.y > 0) AS f) AS g",
            "SELECT t.x AS x FROM t WHERE t.y > 0",
        ),
        (  # a LEFT JOIN's derived table would need its WHERE in the ON: it stays
            "SELECT u.z, d.x FROM u LEFT JOIN (SELECT t.x FROM t WHERE t.y > 0) AS d ON u.x = d.x",
            "SELECT u.z, d.x FROM u LEFT JOIN (SELECT t.x FROM t WHERE t.y > 0) AS d ON u.x = d.x",
        ),
        (  # `x` could be either side's
            "SELECT x FROM (SELECT t.x FROM t) AS f JOIN u ON f.x = u.k",
            "SELECT x FROM (SELECT t.x FROM t) AS f JOIN u ON f.x = u.k",
        ),
    ],
)
def test_derived_tables_that_only_project_merge_at_any_depth_and_beside_joins(
    sql: str, expected: str
) -> None:
    assert merged(sqlglot.parse_one(sql, read="spark")).sql(dialect="spark") == expected
