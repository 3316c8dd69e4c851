"""A dynamic table's DROP ROW expectations as a filter on its query: the plan a refresh runs
keeps only the rows that pass, and stays incremental (rows merged into their SELECT, an
aggregate's groups kept whole in a stage and filtered over it)."""

from __future__ import annotations

import sqlglot

from lake_assets.dynamic_tables.expected import kept
from lake_assets.dynamic_tables.grammar import CreateDynamicTable
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.kinds import parse_statement
from lake_assets.tables.expectations import Expectation, Violation

POSITIVE = Expectation("positive", "amount > 0", Violation.DROP_ROW)
SMALL = Expectation("small", "amount < 100")  # WARN: judged, not filtered


def planned(query: str, names: list[str], columns: dict[str, list[str]]) -> tuple[str | None, str]:
    plan = classify(kept(sqlglot.parse_one(query, read="spark"), names, [POSITIVE, SMALL]), columns)
    return plan.reason, plan.query.sql(dialect="spark")


def test_a_projection_keeps_its_rows_that_pass_in_its_own_where() -> None:
    reason, query = planned(
        "SELECT id, amount FROM t WHERE id > 1", ["id", "amount"], {"t": ["id", "amount"]}
    )
    assert reason is None
    assert query == (
        "SELECT id AS `id`, amount AS `amount` FROM t WHERE t.id > 1 AND "
        "COALESCE(((t.amount) > 0), TRUE)"
    )


def test_an_aggregate_is_filtered_over_its_groups_and_stays_incremental() -> None:
    reason, query = planned(
        "SELECT category, SUM(amount) AS amount FROM t GROUP BY category",
        ["category", "amount"],
        {"t": ["category", "amount"]},
    )
    assert reason is None
    assert "WHERE COALESCE(((`__lake_kept`.`amount`) > 0), TRUE)" in query


def test_without_drop_row_the_query_is_as_written() -> None:
    query = sqlglot.parse_one("SELECT id FROM t", read="spark")
    assert kept(query, ["id"], [SMALL]) is query


def test_create_dynamic_table_takes_constraints_beside_its_columns() -> None:
    statement = parse_statement(
        "CREATE DYNAMIC TABLE d (category COMMENT 'c', total, CONSTRAINT positive EXPECT "
        "(total > 0) ON VIOLATION DROP ROW) AS SELECT category, SUM(amount) FROM t GROUP BY 1"
    )
    assert isinstance(statement, CreateDynamicTable)
    assert [column.name for column in statement.columns] == ["category", "total"]
    assert statement.expectations == (Expectation("positive", "total > 0", Violation.DROP_ROW),)
    only = parse_statement(
        "CREATE DYNAMIC TABLE d (CONSTRAINT c EXPECT (x IS NOT NULL) ON VIOLATION FAIL) "
        "AS SELECT x FROM t"
    )
    assert isinstance(only, CreateDynamicTable)
    assert only.columns == ()
    assert only.expectations == (Expectation("c", "x IS NOT NULL", Violation.FAIL),)
