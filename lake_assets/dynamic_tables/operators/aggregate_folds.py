"""One fold per aggregate kind: what it measures of a group's change, and how it folds that into
the group's old state columns (see aggregate)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, DoubleType, FloatType

from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.analyses.folds import (
    AVG,
    COUNT,
    COUNT_DISTINCT,
    COUNT_STAR,
    MAX,
    MIN,
    SUM,
    Aggregate,
)
from lake_assets.dynamic_tables.runtime.netting import col
from lake_assets.dynamic_tables.runtime.queries import argument_column


def floating(aggregate: Aggregate, argument_types: dict[str, DataType]) -> bool:
    """Floating-point sums drift as values come and go, so their groups are recomputed instead."""
    argument_type = argument_types.get(argument_column(aggregate.slot))
    return isinstance(argument_type, DoubleType | FloatType)


def _changed_name(measure: str, slot: str) -> str:
    """Suffixed with the aggregate's slot, as several aggregates may share a kind."""
    return hidden(f"d_{measure}_{slot}")


def _changed(measure: str, slot: str) -> SparkColumn:
    return F.col(_changed_name(measure, slot))


def old_name(name: str) -> str:
    """Prefixed, as the table's old row is joined beside the change measures of the same group."""
    return hidden(f"o_{name}")


def old_value(name: str) -> SparkColumn:
    return col(old_name(name))


def _plus_change(old_column: str, measure: str, slot: str) -> SparkColumn:
    """The old value plus the change's, where a new group or a change without such rows adds 0."""
    before = F.coalesce(old_value(old_column), F.lit(0))
    return before + F.coalesce(_changed(measure, slot), F.lit(0))


@dataclass(frozen=True)
class Group:
    """What every fold reads of an affected group: its rows after the change, the column types."""

    rows: SparkColumn
    types: dict[str, DataType]


@dataclass(frozen=True)
class Folded:
    """One aggregate's new state columns; `recompute` is set when they may be wrong."""

    columns: dict[str, SparkColumn]
    recompute: SparkColumn | None = None


def _no_measures(
    aggregate: Aggregate, value: SparkColumn, multiplicity: SparkColumn
) -> list[SparkColumn]:
    """COUNT(*) has no argument: the group's row count is all it needs."""
    return []


def _count_measures(
    aggregate: Aggregate, value: SparkColumn, multiplicity: SparkColumn
) -> list[SparkColumn]:
    """A NULL argument counts for no aggregate, so each keeps its own non-NULL count."""
    non_null = F.when(value.isNotNull(), multiplicity).otherwise(0)
    return [F.sum(non_null).alias(_changed_name("nn", aggregate.slot))]


def _sum_measures(
    aggregate: Aggregate, value: SparkColumn, multiplicity: SparkColumn
) -> list[SparkColumn]:
    """Signed values: a lost row takes its value back out of the sum."""
    signed = F.sum(value * multiplicity.cast("int")).alias(_changed_name("sum", aggregate.slot))
    return [*_count_measures(aggregate, value, multiplicity), signed]


def _fold_count_star(aggregate: Aggregate, name: str, group: Group) -> Folded:
    """COUNT(*) is the group's row count, which every aggregate table keeps anyway."""
    return Folded({name: group.rows})


def _fold_count(aggregate: Aggregate, name: str, group: Group) -> Folded:
    """COUNT is its own non-NULL count, so it needs no hidden column."""
    return Folded({name: _plus_change(name, "nn", aggregate.slot)})


def _fold_sum(aggregate: Aggregate, name: str, group: Group) -> Folded:
    """The hidden non-NULL count tells a sum of 0 from the NULL of a group without values."""
    non_null = _plus_change(aggregate.nn, "nn", aggregate.slot)
    total = _plus_change(name, "sum", aggregate.slot)
    return Folded(
        {aggregate.nn: non_null, name: F.when(non_null > 0, total.cast(group.types[name]))}
    )


def _fold_avg(aggregate: Aggregate, name: str, group: Group) -> Folded:
    """Averages do not add up, so the hidden sum and non-NULL count are folded and divided."""
    non_null = _plus_change(aggregate.nn, "nn", aggregate.slot)
    total = _plus_change(aggregate.sum, "sum", aggregate.slot).cast(group.types[aggregate.sum])
    if isinstance(group.types[name], DecimalType):
        average = (total / non_null.cast("decimal(20,0)")).cast(group.types[name])
    else:
        average = total.cast("double") / non_null.cast("double")
    return Folded(
        {aggregate.nn: non_null, aggregate.sum: total, name: F.when(non_null > 0, average)}
    )


def _fold_recomputed(aggregate: Aggregate, name: str, group: Group) -> Folded:
    """Distinct counts and floating-point sums cannot follow changes: the group is recomputed."""
    columns = [name, *(hidden for hidden, _ in aggregate.hidden())]
    return Folded({column: F.lit(None) for column in columns}, F.lit(True))


@dataclass(frozen=True)
class _Extreme:
    """MIN and MAX fold alike, told apart only by which way their values compare."""

    pick: Callable[[SparkColumn], SparkColumn]  # over a group's rows: F.min or F.max
    combine: Callable[[SparkColumn, SparkColumn], SparkColumn]  # across: F.least, F.greatest
    reaches: Callable[[SparkColumn, SparkColumn], SparkColumn]  # at or past: <= or >=

    def measures(
        self, aggregate: Aggregate, value: SparkColumn, multiplicity: SparkColumn
    ) -> list[SparkColumn]:
        """The extremes gained and lost: only a lost one can leave the old extreme unknown."""
        gained = self.pick(F.when(multiplicity > 0, value))
        lost = self.pick(F.when(multiplicity < 0, value))
        return [
            *_count_measures(aggregate, value, multiplicity),
            gained.alias(_changed_name("in", aggregate.slot)),
            lost.alias(_changed_name("out", aggregate.slot)),
        ]

    def fold(self, aggregate: Aggregate, name: str, group: Group) -> Folded:
        """Losing the old extreme leaves the next one unknown, unless a gain reaches it again."""
        gained = _changed("in", aggregate.slot)
        lost = _changed("out", aggregate.slot)
        recompute = (
            lost.isNotNull()
            & F.coalesce(self.reaches(lost, old_value(name)), F.lit(True))
            & ~F.coalesce(self.reaches(gained, old_value(name)), F.lit(False))
        )
        return Folded({name: self.combine(old_value(name), gained)}, recompute)


_Measures = Callable[[Aggregate, SparkColumn, SparkColumn], list[SparkColumn]]
_Fold = Callable[[Aggregate, str, Group], Folded]


@dataclass(frozen=True)
class _Rule:
    """How one aggregate kind follows changes: what it measures of them, how it folds them in."""

    measures: _Measures
    fold: _Fold


_MIN = _Extreme(F.min, F.least, operator.le)
_MAX = _Extreme(F.max, F.greatest, operator.ge)
RULES: dict[str, _Rule] = {
    COUNT_STAR: _Rule(_no_measures, _fold_count_star),
    COUNT: _Rule(_count_measures, _fold_count),
    COUNT_DISTINCT: _Rule(_count_measures, _fold_recomputed),
    SUM: _Rule(_sum_measures, _fold_sum),
    AVG: _Rule(_sum_measures, _fold_avg),
    MIN: _Rule(_MIN.measures, _MIN.fold),
    MAX: _Rule(_MAX.measures, _MAX.fold),
}


def fold_for(aggregate: Aggregate, argument_types: dict[str, DataType]) -> _Fold:
    """Floating-point sums drift as values come and go, so those groups are recomputed instead."""
    if aggregate.kind in (SUM, AVG) and floating(aggregate, argument_types):
        return _fold_recomputed
    return RULES[aggregate.kind].fold
