"""Which queries refresh incrementally, and the reason recorded for those that refresh FULL."""

from __future__ import annotations

import pytest
import sqlglot

from lake_assets.dynamic_tables.analyses.keys import join_key
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.aggregate import ROWS
from tests.dynamic_tables.lowered import (
    AGGREGATE,
    KEYED,
    PROJECTION,
    TOP_N,
    branches,
    plan,
    root_of,
)


@pytest.mark.parametrize(
    ("sql", "shape"),
    [
        ("SELECT a, b * 2 AS c FROM t WHERE a > 1", PROJECTION),
        ("SELECT * FROM t", PROJECTION),
        ("SELECT a FROM t UNION ALL SELECT a FROM u UNION ALL SELECT b FROM t", PROJECTION),
        ("SELECT t.a, u.b FROM t JOIN u ON t.k = u.k JOIN v ON v.k = u.k", PROJECTION),
        ("SELECT t.a, u.b FROM t, u WHERE t.k = u.k", PROJECTION),
        ("SELECT a, COUNT(*) AS n, SUM(b) AS s FROM t GROUP BY a", AGGREGATE),
        ("SELECT a AS k, COUNT(DISTINCT b) AS d, AVG(c) AS m FROM t GROUP BY a", AGGREGATE),
        ("SELECT upper(a) AS k, MIN(b) AS lo, MAX(b) AS hi FROM t GROUP BY upper(a)", AGGREGATE),
        ("SELECT a, COUNT(b) AS n FROM t GROUP BY 1", AGGREGATE),
        ("SELECT u.x, COUNT(*) AS n FROM t JOIN u ON t.k = u.k GROUP BY u.x", AGGREGATE),
        ("SELECT a, b FROM t ORDER BY b DESC", PROJECTION),  # a table has no order
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a ORDER BY n", AGGREGATE),
        ("SELECT COUNT(*) AS n, SUM(b) AS s, MAX(c) AS m FROM t WHERE a > 1", AGGREGATE),
        ("SELECT a, SUM(b) / COUNT(*) AS r FROM t GROUP BY a", AGGREGATE),
        ("SELECT 100.0 * SUM(CASE WHEN a > 1 THEN b ELSE 0 END) / SUM(b) AS p FROM t", AGGREGATE),
        ("SELECT a FROM (SELECT t.a FROM t WHERE t.b > 0) s WHERE a < 5", PROJECTION),
        ("SELECT a FROM (SELECT DISTINCT a FROM t) s", PROJECTION),
        ("WITH s AS (SELECT a FROM t) SELECT a FROM s", PROJECTION),
        ("WITH s AS (SELECT a, SUM(b) AS n FROM t GROUP BY a) SELECT n FROM s", PROJECTION),
        ("SELECT a, x FROM t LATERAL VIEW OUTER explode(t.b) e AS x WHERE x > 0", PROJECTION),
        ("SELECT t.a, p, x FROM t JOIN u ON t.k = u.k LATERAL VIEW posexplode(u.c) e", PROJECTION),
        ("SELECT x, COUNT(*) AS n FROM t LATERAL VIEW inline(t.s) e AS x, y GROUP BY x", AGGREGATE),
        ("SELECT DISTINCT x FROM t LATERAL VIEW stack(2, t.a, t.b) e AS x", KEYED),
    ],
)
def test_incremental_shapes(sql: str, shape: str) -> None:
    found = plan(sql)
    assert (root_of(found), found.reason) == (shape, None)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM t UNION SELECT a FROM u",
        "SELECT a, b FROM t INTERSECT ALL SELECT a, c FROM u WHERE c > 0",
        "SELECT a FROM t EXCEPT SELECT a FROM u",
        "SELECT a FROM t UNION ALL SELECT a FROM u "
        "EXCEPT (SELECT a FROM v INTERSECT SELECT a FROM w)",
    ],
)
def test_set_operations_are_keyed_by_their_rows(sql: str) -> None:
    """Each branch's changes give the rows to recompute: no key expressions, no hidden columns."""
    found = plan(sql)
    assert (root_of(found), found.reason, found.root.keys, found.hidden) == (KEYED, None, (), ())
    assert len(branches(found)) == sql.count("SELECT")


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS r FROM t", "window functions"),
        ("SELECT a, RANK() OVER (PARTITION BY a ORDER BY b), SUM(b) OVER () FROM t", "window"),
        ("SELECT t.a FROM t LEFT JOIN u ON t.a > u.k", "LEFT JOIN is refreshed in full unless"),
        ("SELECT t.a FROM t LEFT JOIN u ON t.k = u.k LEFT JOIN v ON u.x = v.x", "LEFT JOIN"),
        ("SELECT t.a FROM t FULL JOIN u ON t.k = u.k OR t.a = u.a", "FULL JOIN is"),
        ("SELECT a, rand() AS r FROM t", "non-deterministic function RAND()"),
        ("SELECT a, current_timestamp() AS ts FROM t", "non-deterministic"),
        ("SELECT a FROM t LIMIT 5", "LIMIT"),
        ("SELECT DISTINCT * FROM t", "SELECT DISTINCT"),
        ("SELECT DISTINCT a FROM t LIMIT 3", "LIMIT without ORDER BY"),
        ("SELECT a FROM t UNION SELECT a, COUNT(*) AS n FROM u GROUP BY a", "set operation of"),
        ("SELECT a FROM t EXCEPT (SELECT a FROM u LIMIT 3)", "parenthesized query"),
        ("SELECT a FROM t WHERE a IN (SELECT a FROM u)", "subqueries"),
        ("SELECT a FROM (SELECT a FROM t LIMIT 3) s", "derived table"),
        (
            "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 AS n FROM r WHERE n < 3) "
            "SELECT n FROM r",
            "WITH RECURSIVE",
        ),
        ("SELECT 1 AS one, COUNT(*) AS n FROM t", "without GROUP BY selects only aggregates"),
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a HAVING COUNT(*) > (SELECT 1)", "HAVING"),
        ("SELECT a, COUNT(*) AS n, rand() AS r FROM t GROUP BY a", "non-deterministic"),
        (
            "SELECT a, COUNT(*) AS n FROM t GROUP BY ROLLUP (a) HAVING COUNT(*) > (SELECT 1)",
            "HAVING",
        ),
        ("SELECT a, b, COUNT(*) AS n FROM t GROUP BY ROLLUP (a)", "ROLLUP"),
        ("SELECT a, COUNT(*) AS n FROM t UNION ALL SELECT a, 1 AS n FROM u", "aggregate"),
        ("SELECT a FROM t VERSION AS OF 3", "time travel"),
        ("SELECT x FROM t LATERAL VIEW json_tuple(t.j, 'a') e AS x", "LATERAL VIEW JSON_TUPLE"),
        (
            "SELECT t.a, x FROM t LEFT JOIN u ON t.k = u.k LATERAL VIEW explode(u.c) e AS x",
            "LATERAL VIEW beside outer joins",
        ),
    ],
)
def test_full_shapes_say_why(sql: str, reason: str) -> None:
    found = plan(sql)
    assert root_of(found) is None
    assert reason in found.reason


@pytest.mark.parametrize("name", ["user", "current_time", "localtimestamp"])
def test_a_name_spark_calls_is_refreshed_in_full_unless_a_source_column_has_it(name: str) -> None:
    """Spark reads these names without parentheses as the session's user or the clock."""
    query = sqlglot.parse_one(f"SELECT a, {name} AS v FROM t", read="spark")
    assert "non-deterministic" in (classify(query, {"t": ["a", "b"]}).reason or "")
    assert classify(query, {"t": ["a", name.upper()]}).reason is None


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        ("SELECT DISTINCT a, b + 1 AS c FROM t", ["a", "b + 1"]),
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a HAVING COUNT(*) > 1", ["a"]),
        ("SELECT COUNT(*) AS n FROM t GROUP BY a", ["a"]),
        ("SELECT upper(a) AS k, STDDEV(b) AS s FROM t GROUP BY k", ["UPPER(a)"]),
        ("SELECT a, STDDEV(b) AS s FROM t GROUP BY 1", ["a"]),
        ("SELECT a FROM t QUALIFY ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) = 1", ["a"]),
        (
            "SELECT a, RANK() OVER (PARTITION BY a, c ORDER BY b), "
            "SUM(b) OVER (PARTITION BY c, a) FROM t JOIN u ON t.k = u.k",
            ["a", "c"],
        ),
        (
            "SELECT a, SUM(b) AS s, RANK() OVER (PARTITION BY a ORDER BY SUM(b)) FROM t "
            "GROUP BY a, c",
            ["a"],
        ),
    ],
)
def test_keyed_shapes_recompute_by_their_key(sql: str, keys: list[str]) -> None:
    found = plan(sql)
    assert (root_of(found), found.reason) == (KEYED, None)
    assert [key.sql(dialect="spark") for _, key in found.root.keys] == keys
    assert found.hidden == tuple(f"__lake_key_{i}" for i in range(len(keys)))


@pytest.mark.parametrize(
    ("sql", "shape", "key", "columns"),
    [
        ("SELECT t.a, u.b FROM t LEFT JOIN u ON t.k = u.k", PROJECTION, "t.k", ["t.k", "u.k"]),
        (
            "SELECT t.a, u.b FROM t RIGHT JOIN u ON u.k = t.k AND t.a > 1",
            PROJECTION,
            "u.k",
            ["t.k", "u.k"],
        ),
        (
            "SELECT t.a FROM t FULL JOIN u ON t.k = u.k",
            PROJECTION,
            "COALESCE(t.k, u.k)",
            ["t.k", "u.k"],
        ),
        ("SELECT a FROM t LEFT ANTI JOIN u ON t.k = u.k", PROJECTION, "t.k", ["t.k", "u.k"]),
        (
            "SELECT u.x, COUNT(*) AS n FROM t LEFT JOIN u ON t.k = u.k GROUP BY u.x",
            AGGREGATE,
            "t.k",
            ["t.k", "u.k"],
        ),
        (
            "SELECT x.k, MAX_BY(y.b, y.a) AS b FROM t x LEFT JOIN t y ON x.k = y.k "
            "JOIN u ON u.k = y.k GROUP BY x.k",
            KEYED,
            "x.k",
            ["x.k", "y.k", "u.k"],
        ),
        (
            "SELECT t.a FROM t WHERE t.b > 0 AND EXISTS (SELECT 1 FROM u WHERE u.k = t.k) "
            "AND NOT EXISTS (SELECT * FROM v WHERE v.k = t.k AND v.x IS NULL)",
            PROJECTION,
            "t.k",
            ["t.k", "u.k", "v.k"],
        ),
        (
            "SELECT t.k, COUNT(*) AS n FROM t, w WHERE t.k = w.k "
            "AND t.k IN (SELECT u.k FROM u WHERE u.x > 1) GROUP BY t.k",
            AGGREGATE,
            "t.k",
            ["t.k", "w.k", "u.k"],
        ),
    ],
)
def test_outer_semi_and_anti_joins_change_by_their_join_key(
    sql: str, shape: str, key: str, columns: list[str]
) -> None:
    """Each source gives the join keys its changed rows touch from its own column; the rows of
    those keys are recomputed, and the query above (any shape) takes their change."""
    found = plan(sql)
    assert (root_of(found), found.reason) == (shape, None)
    joined = join_key(branches(found)[0])
    assert joined is not None
    assert joined.expression.sql(dialect="spark") == key
    assert [c.sql(dialect="spark") for c in joined.columns.values()] == columns


def test_aggregates_keep_hidden_state_columns() -> None:
    found = plan("SELECT a, COUNT(*) AS n, SUM(b) AS s, AVG(c) AS m, MAX(d) AS x FROM t GROUP BY a")
    assert found.hidden == (ROWS, "__lake_nn_2", "__lake_nn_3", "__lake_sum_3")
    assert plan("SELECT a FROM t").hidden == ()


def test_items_combining_aggregates_fold_each_aggregate_in_a_value_column() -> None:
    found = plan("SELECT a, 2 * MAX(b) + AVG(c) AS m, COUNT(*) AS n FROM t GROUP BY a")
    assert found.hidden == (
        ROWS, "__lake_v_1_0", "__lake_v_1_1", "__lake_nn_1_1", "__lake_sum_1_1",
    )  # fmt: skip
    assert [(p, e.sql(dialect="spark")) for p, e in found.root.expressions] == [
        (1, "2 * `__lake_v_1_0` + `__lake_v_1_1`")
    ]
    assert root_of(plan("SELECT a, a || COUNT(*) AS n FROM t GROUP BY a")) == KEYED


def test_top_n_ranks_the_query_without_its_order_and_limit() -> None:
    found = plan(
        "SELECT cat, SUM(amount) AS s FROM src GROUP BY cat "
        "ORDER BY s DESC, 1, MAX(qty) NULLS FIRST LIMIT 3 OFFSET 1"
    )
    assert (root_of(found), found.reason) == (TOP_N, None)
    top, ranked = found.root.ranking, found.root.ranked.plan
    assert root_of(ranked) == AGGREGATE
    assert top.rows.sql(dialect="spark") == (
        "SELECT cat, SUM(amount) AS s, MAX(qty) AS __lake_order_0 FROM src GROUP BY cat"
    )
    assert [(o.position, o.descending, o.nulls_first) for o in top.order] == [
        (1, True, False), (0, False, True), (2, False, True),
    ]  # fmt: skip
    assert top.top("r", ["cat", "s"]) == (
        "SELECT `cat`, `s` FROM r ORDER BY `s` DESC, `cat` ASC, `__lake_order_0` ASC, `cat`, `s` "
        "LIMIT 3 OFFSET 1"
    )
    assert found.hidden == ()


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT a FROM t LIMIT 5", "LIMIT without ORDER BY"),
        ("SELECT a FROM t ORDER BY a LIMIT 5 + 1", "LIMIT of an expression"),
        ("SELECT a, rand() AS r FROM t ORDER BY a LIMIT 5", "(the rows ORDER BY … LIMIT ranks)"),
    ],
)
def test_top_n_that_stays_full_says_why(sql: str, reason: str) -> None:
    found = plan(sql)
    assert root_of(found) is None
    assert reason in (found.reason or "")


def test_a_derived_table_with_a_key_is_recomputed_for_the_keys_a_change_touches() -> None:
    found = plan(
        "SELECT n, COUNT(*) AS k FROM (SELECT t.a, COUNT(u.b) FROM t LEFT JOIN u ON t.a = u.a "
        "GROUP BY t.a) AS d (a, n) GROUP BY n"
    )
    assert (root_of(found), found.reason) == (AGGREGATE, None)


def test_not_in_keeps_spark_s_null_aware_anti_join_and_keys_its_table() -> None:
    found = plan(
        "SELECT t.a, COUNT(*) AS n FROM t WHERE t.k NOT IN (SELECT u.k FROM u) GROUP BY t.a"
    )
    assert (root_of(found), found.reason) == (AGGREGATE, None)
    assert "NOT t.k IN (SELECT u.k FROM u)" in branches(found)[0].sql(dialect="spark")
    key = join_key(branches(found)[0])
    assert key is not None
    assert (key.expression.sql(dialect="spark"), key.null_aware) == ("t.k", frozenset({"u"}))


def test_a_subquery_tied_by_in_on_another_column_touches_the_keys_it_lets_through() -> None:
    found = plan(
        "SELECT s.name FROM s WHERE s.k IN (SELECT ps.k FROM ps WHERE ps.p IN "
        "(SELECT p.p FROM p WHERE p.name LIKE 'forest%'))"
    )
    assert (root_of(found), found.reason) == (PROJECTION, None)
    key = join_key(branches(found)[0])
    assert key is not None
    assert sorted(key.columns) == ["ps", "s"]
    assert key.scopes["p"].sql(dialect="spark") == (
        "SELECT ps.k FROM ps WHERE ps.p IN (SELECT p.p FROM p WHERE p.name LIKE 'forest%')"
    )


def test_an_uncorrelated_scalar_subquery_in_a_keyed_where_is_a_parameter() -> None:
    found = plan(
        "SELECT c.region, COUNT(*) AS n FROM (SELECT c.region, c.k FROM c "
        "WHERE c.bal > (SELECT AVG(c2.bal) FROM c c2 WHERE c2.bal > 0) "
        "AND NOT EXISTS (SELECT * FROM o WHERE o.k = c.k)) AS c GROUP BY c.region"
    )
    assert (root_of(found), found.reason) == (AGGREGATE, None)
    key = join_key(branches(found)[0])
    assert key is not None
    (parameter,) = key.parameters
    assert (key.expression.sql(dialect="spark"), parameter.aliases) == ("c.k", {"c2"})
    assert parameter.conjunct.sql(dialect="spark").startswith("c.bal > (SELECT AVG(c2.bal)")
    assert parameter.rows.sql(dialect="spark") == (
        "SELECT c.k FROM c LEFT ANTI JOIN o AS o ON o.k = c.k"
    )
