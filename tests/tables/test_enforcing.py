"""A write that does not judge rows yet (a Kafka pipe's batch, a changelog export) refuses a
table with expectations in one line, rather than let its rows in unjudged."""

from __future__ import annotations

import pytest

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.tables.enforcing import refuse_expectations
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Expectation


def test_a_write_that_judges_no_rows_refuses_a_table_with_expectations() -> None:
    table = TableEntry("t", "/nowhere/t", (Column("id", "INT"),))
    refuse_expectations(table, "pipe p, a Kafka pipe,")  # none: nothing to refuse
    expected = TableEntry("t", "/nowhere/t", (Column("id", "INT"),), expectations=(
        Expectation("positive", "id > 0"), Expectation("small", "id < 9"),
    ))  # fmt: skip
    with pytest.raises(LakeError) as caught:
        refuse_expectations(expected, "pipe p, a Kafka pipe,")
    assert str(caught.value) == (
        "pipe p, a Kafka pipe, does not judge rows by expectations yet, and table t has "
        "expectations (positive, small); nothing was written — write into a table without "
        "expectations, or first ALTER TABLE t DROP CONSTRAINT positive (and each other one)"
    )
