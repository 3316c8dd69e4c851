"""Which parts of a query the lowering keeps in stages (hidden tables of their own, refreshed
first), and what no stage can hold."""

from __future__ import annotations

import pytest

from lake_assets.dynamic_tables.rewrites.stages import VALUE
from tests.dynamic_tables.lowered import (
    AGGREGATE,
    PROJECTION,
    plan,
    root_of,
)


def stages_of(sql: str) -> list[tuple[str, tuple[str, ...], str]]:
    """Each stage's shape, columns and query, in the order they refresh."""
    return [
        (root_of(stage.plan) or "FULL", stage.columns, stage.plan.query.sql(dialect="spark"))
        for stage in plan(sql).all_stages()
    ]


def test_an_uncorrelated_scalar_without_a_key_is_a_one_row_stage_joined_to_every_row() -> None:
    found = plan("SELECT t.a FROM t WHERE t.v > (SELECT AVG(u.v) FROM u)")
    assert (root_of(found), found.reason) == (PROJECTION, None)
    ((shape, columns, query),) = stages_of("SELECT t.a FROM t WHERE t.v > (SELECT AVG(u.v) FROM u)")
    assert (shape, columns, query) == (AGGREGATE, (VALUE,), f"SELECT AVG(u.v) AS {VALUE} FROM u")
    (stage,) = found.stages
    assert found.query.sql(dialect="spark") == (
        f"SELECT t.a FROM t CROSS JOIN {stage.name} AS __lake_scalar_0 "
        f"WHERE t.v > __lake_scalar_0.{VALUE}"
    )


def test_a_having_with_a_scalar_filters_its_groups_kept_in_a_stage() -> None:
    """TPC-H Q11's shape: the groups and what the HAVING tests of them, then the scalar."""
    sql = (
        "SELECT t.k, SUM(t.v) AS total FROM t GROUP BY t.k "
        "HAVING SUM(t.v) > (SELECT SUM(u.v) * 0.1 FROM u) AND t.k IS NOT NULL"
    )
    found = plan(sql)
    assert (root_of(found), found.reason) == (PROJECTION, None)
    (groups, scalar) = stages_of(sql)
    assert groups == (
        AGGREGATE,
        ("__lake_c_0", "__lake_c_1"),
        "SELECT t.k AS __lake_c_0, SUM(t.v) AS __lake_c_1 FROM t GROUP BY t.k",
    )
    assert scalar[:2] == (AGGREGATE, (VALUE,))
    assert found.query.sql(dialect="spark").endswith(
        "WHERE __lake_groups.__lake_c_1 > __lake_scalar_1.__lake_value AND "
        "NOT __lake_groups.__lake_c_0 IS NULL"
    )


def test_a_derived_table_beside_a_table_and_a_scalar_over_it_are_stages() -> None:
    """TPC-H Q15's shape: a grouped CTE joined to a table, and its maximum."""
    sql = (
        "WITH r AS (SELECT o.k AS no, SUM(o.v) AS total FROM o GROUP BY no) "
        "SELECT s.k, r.total FROM s, r WHERE s.k = r.no AND r.total = (SELECT MAX(total) FROM r)"
    )
    found = plan(sql)
    assert (root_of(found), found.reason) == (PROJECTION, None)
    assert [(shape, columns) for shape, columns, _ in stages_of(sql)] == [
        (AGGREGATE, ("no", "total")), (AGGREGATE, (VALUE,)),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        # a stage that cannot be maintained: the query stays FULL for it
        ("SELECT t.a FROM t WHERE t.v > (SELECT MAX(u.v) + rand() FROM u)", "RAND()"),
        ("SELECT t.a, d.n FROM t JOIN (SELECT u.a, rand() AS n FROM u) d ON t.a = d.a",
         "RAND()"),
        # several rows: not a scalar
        ("SELECT t.a FROM t WHERE t.v > (SELECT u.v FROM u)", "subqueries"),
    ],
)  # fmt: skip
def test_what_no_stage_can_hold_stays_full(sql: str, reason: str) -> None:
    found = plan(sql)
    assert (root_of(found), found.stages) == (None, ())
    assert reason in found.reason


@pytest.mark.parametrize(
    ("sql", "sets"),
    [
        ("SELECT a, b, SUM(x) AS s FROM t GROUP BY ROLLUP (a, b)", 3),
        ("SELECT a, b, SUM(x) AS s FROM t GROUP BY a, b WITH ROLLUP", 3),
        ("SELECT a, b, COUNT(*) AS n FROM t GROUP BY CUBE (a, b) HAVING COUNT(*) > 1", 4),
        ("SELECT a, b, MAX(x) AS m FROM t GROUP BY GROUPING SETS ((a, b), a, ())", 3),
        ("SELECT c, a, MIN(x) AS m FROM t GROUP BY c, ROLLUP (a)", 2),
    ],
)
def test_grouping_sets_are_a_union_all_of_one_stage_per_set(sql: str, sets: int) -> None:
    found = plan(sql)
    assert (root_of(found), found.reason, len(found.stages)) == (PROJECTION, None, sets)
    assert all(root_of(stage.plan) == AGGREGATE for stage in found.stages)


def test_a_grouping_set_reads_its_keys_nulls_the_others_and_numbers_grouping() -> None:
    found = plan(
        "SELECT upper(a) AS u, b, SUM(x) AS s, GROUPING_ID() AS g, GROUPING(b) AS gb FROM t "
        "GROUP BY ROLLUP (a, b)"
    )
    branches = found.query.sql(dialect="spark").split(" UNION ALL ")
    groups = "__lake_groups"
    assert [branch.split(" FROM ")[0] for branch in branches] == [
        f"SELECT UPPER({groups}.__lake_k_0) AS u, {groups}.__lake_k_1 AS b, "
        f"{groups}.__lake_a_0 AS s, CAST(0 AS BIGINT) AS g, CAST(0 AS TINYINT) AS gb",
        f"SELECT UPPER({groups}.__lake_k_0) AS u, NULL AS b, {groups}.__lake_a_0 AS s, "
        "CAST(1 AS BIGINT) AS g, CAST(1 AS TINYINT) AS gb",
        f"SELECT UPPER(NULL) AS u, NULL AS b, {groups}.__lake_a_0 AS s, CAST(3 AS BIGINT) AS g, "
        "CAST(1 AS TINYINT) AS gb",
    ]
    # The grand total is an aggregate of every row: kept only while there are rows.
    assert branches[2].endswith(f"WHERE {groups}.__lake_n > 0")
