"""Expectations in the table statements' grammar: CONSTRAINT … EXPECT in CREATE TABLE, ALTER
TABLE's ADD / DROP CONSTRAINT, and the conditions refused, each in one line, without Spark."""

from __future__ import annotations

import pytest

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.tables.expectations import (
    Expectation,
    Violation,
    declared_expectations,
    expectations_naming,
)
from lake_assets.tables.grammar import AddExpectation, CreateTable, DropExpectation

COLUMNS = (Column("Id", "BIGINT"), Column("amount", "DECIMAL(10,2)"))


def refused(text: str) -> str:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    return str(caught.value)


def test_create_table_declares_expectations_with_warn_by_default() -> None:
    statement = parse_statement(
        "CREATE TABLE orders (Id BIGINT, amount DECIMAL(10,2), "
        "CONSTRAINT valid_amount EXPECT (amount > 0 AND (id < 10 OR id > 20)) "
        "ON VIOLATION DROP ROW, CONSTRAINT has_id EXPECT (ID IS NOT NULL) ON VIOLATION FAIL, "
        "CONSTRAINT small EXPECT (amount < 1000000))"
    )
    assert isinstance(statement, CreateTable)
    assert statement.expectations == (
        Expectation(
            "valid_amount",
            "amount > 0 AND (id < 10 OR id > 20)",
            Violation.DROP_ROW,
            ("amount", "Id"),
        ),
        Expectation("has_id", "ID IS NOT NULL", Violation.FAIL, ("Id",)),
        Expectation("small", "amount < 1000000", Violation.WARN, ("amount",)),
    )
    # A row whose condition is NULL passes, as with SQL's CHECK.
    assert statement.expectations[2].passes == "COALESCE((amount < 1000000), TRUE)"
    assert statement.expectations[1].declaration() == "EXPECT (ID IS NOT NULL) ON VIOLATION FAIL"


def test_alter_table_adds_and_drops_an_expectation() -> None:
    assert parse_statement(
        "ALTER TABLE orders ADD CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION WARN"
    ) == AddExpectation("orders", Expectation("positive", "amount > 0", Violation.WARN))
    assert parse_statement("ALTER TABLE orders DROP CONSTRAINT positive") == DropExpectation(
        "orders", "positive"
    )


@pytest.mark.parametrize(
    ("condition", "problem"),
    [
        ("rand() > 0.5", "uses a non-deterministic function: RAND()"),
        ("uuid() IS NOT NULL", "uses a non-deterministic function: UUID()"),
        ("amount < current_timestamp()", "uses a non-deterministic function: CURRENT_TIMESTAMP()"),
        ("now() > amount", "uses a non-deterministic function: NOW()"),
        ("id IN (SELECT id FROM other)", "uses a subquery: (SELECT id FROM other)"),
        ("EXISTS (SELECT 1)", "uses a subquery: EXISTS(SELECT 1)"),
        ("SUM(amount) > 0", "uses an aggregate: SUM(amount)"),
        ("price > 0", "reads price, which is not a column of table orders"),
        ("o.amount > 0", "reads o.amount, which is not a column of table orders"),
        ("amount >", "cannot be read: (amount >)"),
    ],
)
def test_a_condition_that_does_not_judge_one_row_by_its_columns_is_refused(
    condition: str, problem: str
) -> None:
    text = f"CREATE TABLE orders (id BIGINT, amount INT, CONSTRAINT e EXPECT ({condition}))"
    assert refused(text).startswith(f"expectation e of table orders {problem}")


def test_expectations_are_named_once_and_violations_spelled_out() -> None:
    assert refused(
        "CREATE TABLE t (id INT, CONSTRAINT e EXPECT (id > 0), CONSTRAINT E EXPECT (id < 9))"
    ).startswith("expectation e is declared twice on table t")
    assert "expected WARN, DROP ROW or FAIL but found 'SKIP'" in refused(
        "CREATE TABLE t (id INT, CONSTRAINT e EXPECT (id > 0) ON VIOLATION SKIP)"
    )
    assert "expected EXPECT but found 'CHECK'" in refused(
        "CREATE TABLE t (id INT, CONSTRAINT e CHECK (id > 0))"
    )


def test_the_expectations_naming_a_column_match_it_case_insensitively() -> None:
    (checked,) = declared_expectations(
        "table orders", COLUMNS, [Expectation("e", "ID + amount > 0")]
    )
    assert checked.columns == ("Id", "amount")
    assert expectations_naming([checked], "id") == (checked,)
    assert expectations_naming([checked], "other") == ()
