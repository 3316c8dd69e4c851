"""What the analyses decide, seen in the plan a query lowers to: the key a DISTINCT over groups or
windows keeps, aggregates of distinct values, the groupings refreshed in full with a reason of
their own, and items without a name of their own kept out of stages."""

from __future__ import annotations

import pytest
import sqlglot

from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.aggregate import Aggregate
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.operators.recompute import RecomputeByKey


def plan(sql: str) -> Plan:
    return classify(sqlglot.parse_one(sql, read="spark"))


@pytest.mark.parametrize(
    ("sql", "keys", "stateful"),
    [
        (
            "SELECT DISTINCT a FROM t GROUP BY a, c",
            ["a"],
            "SELECT DISTINCT a, a AS __lake_key_0 FROM t GROUP BY a, c",
        ),
        (
            "SELECT DISTINCT a, RANK() OVER (PARTITION BY a, b ORDER BY c) AS r FROM t",
            ["a"],
            "SELECT DISTINCT a, RANK() OVER (PARTITION BY a, b ORDER BY c) AS r, "
            "a AS __lake_key_0 FROM t",
        ),
        (
            "SELECT a, SUM(DISTINCT b) AS s, AVG(DISTINCT b) AS m FROM t GROUP BY a",
            ["a"],
            "SELECT a, SUM(DISTINCT b) AS s, AVG(DISTINCT b) AS m, a AS __lake_key_0 FROM t "
            "GROUP BY a",
        ),
    ],
)
def test_the_groups_a_change_touches_are_recomputed(
    sql: str, keys: list[str], stateful: str
) -> None:
    """A key column added to a DISTINCT's items must not tell apart rows DISTINCT makes one:
    it is one of the items already."""
    found = plan(sql)
    assert found.reason is None
    assert isinstance(found.root, RecomputeByKey)
    assert [key.sql(dialect="spark") for _, key in found.root.keys] == keys
    assert found.stateful.sql(dialect="spark") == stateful


def test_the_extremes_of_distinct_values_are_folded() -> None:
    found = plan("SELECT a, MIN(DISTINCT b) AS lo, MAX(DISTINCT b) AS hi FROM t GROUP BY a")
    assert found.reason is None
    assert isinstance(found.root, Aggregate)
    assert [a.argument.sql(dialect="spark") for a in found.root.aggregates if a.argument] == [
        "b", "b",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT DISTINCT COUNT(*) AS n FROM t GROUP BY a", "SELECT DISTINCT is refreshed in full"),
        (
            "SELECT DISTINCT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c) AS r FROM t",
            "SELECT DISTINCT is refreshed in full",
        ),
        ("SELECT SUM(DISTINCT b) AS s FROM t", "aggregate SUM(DISTINCT b) is refreshed in full"),
        (
            "SELECT a, SUM(b) AS s FROM t GROUP BY ALL",
            "GROUP BY ALL is refreshed in full: list the grouping expressions instead",
        ),
        ("SELECT COUNT(*) AS n FROM t GROUP BY ()", "GROUP BY () is refreshed in full"),
        (
            "SELECT a, SUM(x) FROM t GROUP BY ROLLUP (a)",
            "ROLLUP, CUBE and GROUPING SETS are refreshed in full unless each grouping set's "
            "groups can be kept in a stage (no DISTINCT, window or subquery, and every computed "
            "item named with AS)",
        ),
        ("SELECT a, localtimestamp() AS ts FROM t", "non-deterministic function LOCALTIMESTAMP"),
    ],
)
def test_what_stays_full_says_why(sql: str, reason: str) -> None:
    found = plan(sql)
    assert (found.reason or "").startswith(reason)
    assert found.stages == ()
