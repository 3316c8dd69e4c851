"""What judging a write needs besides Spark: a write that does not judge rows yet (a Kafka pipe's
batch, a changelog export) refuses a table with expectations, and the rows judged and the
statement are bound to read the same stream ranges."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
from sqlglot import exp

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.sql.statements import Dml, Query
from lake_assets.tables.enforcing import bound_alike, refuse_expectations
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Expectation

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


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


class _Binding:
    """Binds statements as the stream ranges given, one per bind, in turn."""

    def __init__(self, *reads: tuple[str, ...]) -> None:
        self.reads = list(reads)

    def bind(self, statement: object) -> SimpleNamespace:
        return SimpleNamespace(reads=self.reads.pop(0), statement=statement)


def test_the_rows_judged_and_the_statement_read_the_same_stream_ranges() -> None:
    rows, statement = Query(exp.select("1")), Dml("MERGE", "t", exp.select("1"))
    # A commit to the stream's source between the first two binds: bound again.
    binding = _Binding(("s@1-5",), ("s@1-6",), ("s@1-6",), ("s@1-6",))
    judging, writing = bound_alike(cast("Context", binding), rows, statement)
    assert (judging.statement, writing.statement) == (rows, statement)
    assert judging.reads == writing.reads == ("s@1-6",)
    moving = _Binding(*((f"s@1-{end}",) for end in range(6)))
    with pytest.raises(LakeError, match="the streams t's MERGE reads kept changing"):
        bound_alike(cast("Context", moving), rows, statement)
