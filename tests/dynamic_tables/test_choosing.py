"""How a refresh is run: whether Spark compiles its expressions, from the rows it reads."""

from __future__ import annotations

import sqlglot

from lake_assets.dynamic_tables.choosing import COMPILED_MIN_ROWS, Estimate, compiled
from lake_assets.dynamic_tables.plan import classify

SUMMARY = "SELECT category, COUNT(*) AS n, MIN(dt) AS first FROM sales GROUP BY category"
JOINED = "SELECT s.id, c.region FROM sales s JOIN customers c ON s.customer = c.id"


def test_an_aggregate_of_one_table_reads_its_changes_and_groups_only() -> None:
    plan = classify(sqlglot.parse_one(SUMMARY, read="spark"))
    few_changes = Estimate(changed=5, rows=10 * COMPILED_MIN_ROWS)
    assert not compiled(plan, few_changes, table_rows=20)
    assert compiled(plan, few_changes, table_rows=COMPILED_MIN_ROWS)
    assert compiled(plan, Estimate(changed=COMPILED_MIN_ROWS, rows=0), table_rows=20)


def test_a_join_reads_its_sources_and_no_estimate_compiles() -> None:
    plan = classify(sqlglot.parse_one(JOINED, read="spark"))
    assert compiled(plan, Estimate(changed=5, rows=COMPILED_MIN_ROWS), table_rows=20)
    assert not compiled(plan, Estimate(changed=5, rows=1000), table_rows=20)
    assert compiled(plan, None, table_rows=0)
