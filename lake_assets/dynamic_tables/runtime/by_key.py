"""Recompute by key, the one way a rule re-reads what a change touched: the keys are held under
a view of their own, a query is restricted to them (before any grouping or window), and it is
read over the sources as they are now, and as the last refresh read them when the rule needs
what was there before (the table's own rows are the other "before", see
operators.recompute)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql.types import DataType
from sqlglot import exp

from lake_assets.dynamic_tables.runtime.netting import signed
from lake_assets.dynamic_tables.runtime.queries import keys_restricted, rewrite
from lake_assets.dynamic_tables.runtime.sources import Changes


@dataclass(frozen=True)
class Touched:
    """The distinct keys a change touches (a column each), held once under `view`."""

    frame: DataFrame
    view: str

    @classmethod
    def held(cls, keys: DataFrame, view: str, distinct: bool = True) -> Touched:
        """`keys` deduplicated and computed once (the statements that read them do not recompute
        them); `distinct` off, taken as they are: keys already computed once each (a MAP key
        cannot be deduplicated)."""
        frame = keys.distinct().localCheckpoint() if distinct else keys
        frame.createOrReplaceTempView(view)
        return cls(frame, view)

    @property
    def types(self) -> dict[str, DataType]:
        return {field.name: field.dataType for field in self.frame.schema.fields}

    def restricted(self, query: exp.Expr, keys: Sequence[tuple[str, exp.Expr]]) -> exp.Expr:
        """`query` over only the rows whose keys (column of these keys, expression over the
        query's rows) are touched."""
        return keys_restricted(query, keys, self.view, self.types)


def read_now(changes: Changes, query: exp.Expr) -> DataFrame:
    """The query over the sources as read now."""
    return changes.spark.sql(rewrite(query, lambda _, name: changes.now(name)))


def read_before(changes: Changes, query: exp.Expr) -> DataFrame:
    """The query over the sources as the last refresh read them."""
    return changes.spark.sql(rewrite(query, lambda _, name: changes.before(name)))


def now_less_before(changes: Changes, query: exp.Expr, names: list[str]) -> list[DataFrame]:
    """The query's rows now (+1) and as last read (-1), named `names`, not netted."""
    now = read_now(changes, query).toDF(*names)
    before = read_before(changes, query).toDF(*names)
    return [signed(now, 1), signed(before, -1)]
