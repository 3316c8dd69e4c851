"""Signed rows, the one currency of changes: each row with its multiplicity (+n gained, -n lost).
Netting sums a row's multiplicities and drops the rows that cancel out; a difference is rows now
(+1) less rows before (-1), netted."""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lake_assets.core.delta import quote_name
from lake_assets.core.names import hidden

MULT = hidden("mult")


def col(name: str) -> SparkColumn:
    return F.col(quote_name(name))


def free_name(name: str, taken: Iterable[str]) -> str:
    """`name`, with underscores appended while a column of `taken` has it: a source's own
    columns (from a file's schema, say) may use the hidden prefix too."""
    lowered = {column.lower() for column in taken}
    while name.lower() in lowered:
        name += "_"
    return name


def signed(frame: DataFrame, sign: int) -> DataFrame:
    """Every row of `frame` gained (+1) or lost (-1)."""
    return frame.withColumn(MULT, F.lit(sign))


def netted(frame: DataFrame, names: list[str], multiplicity: str = MULT) -> DataFrame:
    """Each row once, with the sum of its multiplicities; rows that cancel out are dropped."""
    total = F.sum(col(multiplicity)).alias(multiplicity)
    return frame.groupBy(*map(col, names)).agg(total).filter(col(multiplicity) != 0)


def difference(now: DataFrame, before: DataFrame, names: list[str]) -> DataFrame:
    """The rows `now` has more (+n) and fewer (-n) than `before` (both named `names`)."""
    return netted(signed(now.toDF(*names), 1).unionAll(signed(before.toDF(*names), -1)), names)


def copies(frame: DataFrame, count: SparkColumn, columns: list[str]) -> DataFrame:
    """Each row repeated `count` times (count ≥ 1)."""
    copy = free_name(hidden("copy"), columns)
    repeated = F.explode(F.sequence(F.lit(1), count)).alias(copy)
    return frame.select(*map(col, columns), repeated).drop(copy)
