"""A derived table with a key (GROUP BY, DISTINCT, PARTITION BY) as the whole FROM: its rows of
one key value come from its source rows of that value, so the change is the query over the
derived table's rows of the keys the changed source rows touch, now less as last read."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from sqlglot import exp

from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.analyses.shapes import derived_table
from lake_assets.dynamic_tables.operators.base import Operator
from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.runtime.by_key import Touched, now_less_before
from lake_assets.dynamic_tables.runtime.netting import col
from lake_assets.dynamic_tables.runtime.queries import key_name
from lake_assets.dynamic_tables.runtime.sources import Changes

_DERIVED = (
    "the derived table's rows of the keys its changed source rows touch, read now less as last read"
)


@dataclass(frozen=True)
class DerivedKey(Branch):
    """A derived table with a key (GROUP BY, DISTINCT, PARTITION BY): its rows of one key value
    come from its source rows of that value, so the change is the branch over the derived
    table's rows of the keys the changed source rows touch, now (+1) less as last read (-1)."""

    derived: exp.Subquery
    keys: tuple[exp.Expr, ...]
    touched: Branch

    @property
    def children(self) -> tuple[Operator, ...]:
        return (self.touched,)

    @property
    def rule(self) -> str:
        return _DERIVED

    @property
    def join_label(self) -> str | None:
        keys = ", ".join(key.sql(dialect="spark") for key in self.keys)
        return f"Derived table by key {keys}"

    def signed_rows(self, changes: Changes, names: list[str], index: int) -> list[DataFrame]:
        inner = self.derived.this
        columns = [key_name(position) for position in range(len(self.keys))]
        changed = self.touched.signed_rows(changes, columns, index)
        keys = reduce(DataFrame.unionAll, changed).select(*map(col, columns))
        touched = Touched.held(keys, hidden(f"derived_keys_{index}"))
        restricted = self.select.copy()
        within = derived_table(restricted)
        assert within is not None, "the copy reads the same derived table"
        within.set("this", touched.restricted(inner, list(zip(columns, self.keys, strict=True))))
        return now_less_before(changes, restricted, names)
