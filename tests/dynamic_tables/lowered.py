"""Queries lowered as the tests of the lowering read them: the plan, its root operator's class
and the SELECTs the root reads."""

from __future__ import annotations

import sqlglot

from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.aggregate import Aggregate
from lake_assets.dynamic_tables.operators.base import Plan
from lake_assets.dynamic_tables.operators.recompute import RecomputeByKey
from lake_assets.dynamic_tables.operators.rows import Rows
from lake_assets.dynamic_tables.operators.top_n import TopN

PROJECTION, AGGREGATE, KEYED, TOP_N = Rows, Aggregate, RecomputeByKey, TopN


def plan(sql: str) -> Plan:
    return classify(sqlglot.parse_one(sql, read="spark"))


def root_of(found: Plan) -> type | None:
    """The root operator's class, or None when the plan refreshes FULL."""
    return None if found.reason else type(found.tree)


def branches(found: Plan) -> list[sqlglot.exp.Select]:
    """The SELECTs whose rows the root reads."""
    root = found.root
    if isinstance(root, Aggregate):
        return [root.select]
    if isinstance(root, RecomputeByKey) and root.keys:
        assert isinstance(root.query, sqlglot.exp.Select)
        return [root.query]
    each = root.touched if isinstance(root, RecomputeByKey) else root.branches
    return [branch.select for branch in each]
