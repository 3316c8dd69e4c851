"""The incremental refresh of an aggregate: the changed rows are grouped, each aggregate kind
folds its change into the hidden per-group state (one rule per kind), and groups whose state
cannot absorb the change are recomputed from the sources; one MERGE applies the result."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    StructField,
    StructType,
)
from sqlglot import exp

from lake_assets.core.delta import delta_ref, quote_name
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.delta_rule import row_changes
from lake_assets.dynamic_tables.folds import (
    AVG,
    COUNT,
    COUNT_DISTINCT,
    COUNT_STAR,
    MAX,
    MIN,
    SUM,
    Aggregate,
)
from lake_assets.dynamic_tables.incremental import (
    MERGE_SOURCE,
    MULT,
    OP,
    SourceRead,
    col,
    null_safe,
    only_gained,
    table_at,
    view_or_self,
)
from lake_assets.dynamic_tables.keyed import keys_restricted
from lake_assets.dynamic_tables.plan import ROWS, Plan
from lake_assets.dynamic_tables.queries import (
    ROW_MARK,
    argument_column,
    key_column,
    pre_aggregation,
    rewrite,
    with_hidden,
)
from lake_assets.dynamic_tables.shapes import by_join_key, derived_table
from lake_assets.sql.types import same

RECOMPUTE_KEYS = hidden("recompute")
_CHANGED_ROWS = hidden("changed_rows")
_EXISTED = hidden("existed")
_RECOMPUTE = hidden("recompute_group")


def _floating(aggregate: Aggregate, argument_types: dict[str, DataType]) -> bool:
    """Floating-point sums drift as values come and go, so their groups are recomputed instead."""
    argument_type = argument_types.get(argument_column(aggregate.slot))
    return isinstance(argument_type, DoubleType | FloatType)


def _may_recompute(plan: Plan, argument_types: dict[str, DataType], gained: bool) -> bool:
    """Whether any group can need recomputing: COUNT(DISTINCT), floating SUM/AVG, MIN/MAX
    unless the rows aggregated were only `gained` (no extreme lost), and a group emptied."""
    extremes = () if gained else (MIN, MAX)
    return (not plan.keys and not gained) or any(
        a.kind in (*extremes, COUNT_DISTINCT)
        or (a.kind in (SUM, AVG) and _floating(a, argument_types))
        for a in plan.aggregates
    )


def _only_gained(spark: SparkSession, plan: Plan, reads: dict[str, SourceRead]) -> bool:
    """Whether the rows aggregated were only gained: the sources only gained rows, and the
    rows read from them by inner joins alone, which gain no row from another's loss."""
    select = plan.branches[0]
    if by_join_key(select) or derived_table(select) is not None:
        return False
    return only_gained(spark, reads.values())


def aggregate_merge(
    spark: SparkSession,
    plan: Plan,
    query: exp.Expr,
    reads: dict[str, SourceRead],
    location: str,
    version: int,
    schema: StructType,
    visible: list[str],
) -> str:
    """Register the MERGE source that brings the affected groups up to date; return the MERGE."""
    keys = {key_column(position): visible[position] for position, _ in plan.keys}
    types = {field.name: field.dataType for field in schema.fields}
    changes, argument_types = _group_changes(spark, plan, reads, list(keys))
    old = table_at(spark, location, version)
    old = old.select(*[col(c).alias(_old_name(c)) for c in old.columns]).alias("o")
    matches = [
        same(f"g.{quote_name(key)}", f"o.{quote_name(_old_name(name))}", types[name])
        for key, name in keys.items()
    ]
    joined = changes.join(old, on=F.expr(" AND ".join(matches) or "TRUE"), how="left")
    columns = [field.name for field in schema.fields]
    state = _new_state(plan, joined, schema, visible, argument_types)
    rows = F.col(ROWS)
    emptied, recompute = (rows == 0) & F.col(_EXISTED), (rows > 0) & F.col(_RECOMPUTE)
    if not plan.keys:
        # An aggregate without GROUP BY answers one row even of no rows (COUNT 0, SUM NULL):
        # emptied, that row is recomputed rather than deleted.
        emptied, recompute = F.lit(False), recompute | (rows == 0)
    removed = state.filter(emptied).withColumn(OP, F.lit("D"))
    updated = state.filter((rows > 0) & ~F.col(_RECOMPUTE)).withColumn(OP, F.lit("U"))
    to_recompute = state.filter(recompute)
    recompute_keys = to_recompute.select(*[col(name).alias(key) for key, name in keys.items()])
    recompute_keys.createOrReplaceTempView(RECOMPUTE_KEYS)
    merge_columns = [*columns, OP]
    source = removed.select(*merge_columns).unionAll(updated.select(*merge_columns))
    may_recompute = _may_recompute(plan, argument_types, _only_gained(spark, plan, reads))
    if may_recompute and not to_recompute.isEmpty():
        key_types = {position: types[visible[position]] for position, _ in plan.keys}
        recomputed = _recomputed_groups(spark, plan, query, reads, columns, key_types)
        source = source.unionAll(recomputed).localCheckpoint()
    source.createOrReplaceTempView(MERGE_SOURCE)
    key_fields = [field for field in schema.fields if field.name in keys.values()]
    return _upsert_sql(location, columns, key_fields)


def _group_changes(
    spark: SparkSession, plan: Plan, reads: dict[str, SourceRead], keys: list[str]
) -> tuple[DataFrame, dict[str, DataType]]:
    """Each affected group's change measures, and the argument types that decide how it folds."""
    arguments = [argument_column(a.slot) for a in plan.aggregates if a.argument is not None]
    # Netted and grouped after one shuffle: rows are netted within their group's partition.
    read = pre_aggregation(plan)
    changes = row_changes(spark, (read,), reads, [*keys, *arguments] or [ROW_MARK], tuple(keys))
    argument_types = {field.name: field.dataType for field in changes.schema.fields}
    multiplicity = F.col(MULT)
    measures = [F.sum(multiplicity).alias(_CHANGED_ROWS)]
    for aggregate in plan.aggregates:
        value = col(argument_column(aggregate.slot))
        measures += _RULES[aggregate.kind].measures(aggregate, value, multiplicity)
    return changes.groupBy(*map(col, keys)).agg(*measures).alias("g"), argument_types


def _new_state(
    plan: Plan,
    joined: DataFrame,
    schema: StructType,
    visible: list[str],
    argument_types: dict[str, DataType],
) -> DataFrame:
    """Each group's new row, checkpointed: the checks and the MERGE read it, not its plan."""
    types = {field.name: field.dataType for field in schema.fields}
    group = _Group(rows=F.coalesce(_old(ROWS), F.lit(0)) + F.col(_CHANGED_ROWS), types=types)
    values = {visible[position]: col(key_column(position)) for position, _ in plan.keys}
    values[ROWS] = group.rows
    recompute = F.lit(False)
    for aggregate in plan.aggregates:
        fold = _fold_for(aggregate, argument_types)
        folded = fold(aggregate, aggregate.value or visible[aggregate.position], group)
        values.update(folded.columns)
        if folded.recompute is not None:
            recompute = recompute | folded.recompute
    flags = [_old(ROWS).isNotNull().alias(_EXISTED), recompute.alias(_RECOMPUTE)]
    folded_state = joined.select(
        *[
            values[field.name].cast(field.dataType).alias(field.name)
            for field in schema.fields
            if field.name in values
        ],
        *flags,
    )
    # An item combining aggregates is the same expression over their folded values.
    combined = {
        visible[position]: F.expr(expression.sql(dialect="spark"))
        for position, expression in plan.expressions
    }
    return folded_state.select(
        *[
            combined.get(field.name, col(field.name)).cast(field.dataType).alias(field.name)
            for field in schema.fields
        ],
        F.col(_EXISTED),
        F.col(_RECOMPUTE),
    ).localCheckpoint()


def _recomputed_groups(
    spark: SparkSession,
    plan: Plan,
    query: exp.Expr,
    reads: dict[str, SourceRead],
    columns: list[str],
    key_types: dict[int, DataType],
) -> DataFrame:
    """The groups no fold could follow, from the query itself, reading only their own rows."""
    keys = [(key_column(position), key) for position, key in plan.keys]
    types = {key_column(position): key_type for position, key_type in key_types.items()}
    restricted = with_hidden(plan, query)
    if keys:
        restricted = keys_restricted(restricted, keys, RECOMPUTE_KEYS, types)
    sql = rewrite(restricted, lambda _, table: view_or_self(reads, table, "new"))
    return spark.sql(sql).toDF(*columns).withColumn(OP, F.lit("U"))


def _upsert_sql(location: str, columns: list[str], key_fields: list[StructField]) -> str:
    """One MERGE both drops emptied groups and writes folded ones, so readers see one commit."""
    assignments = ", ".join(f"t.{quote_name(c)} = s.{quote_name(c)}" for c in columns)
    names = ", ".join(map(quote_name, columns))
    values = ", ".join(f"s.{quote_name(c)}" for c in columns)
    return (
        f"MERGE INTO {delta_ref(location)} AS t USING {MERGE_SOURCE} AS s "
        f"ON {null_safe('t', 's', key_fields)} "
        f"WHEN MATCHED AND s.{OP} = 'D' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {assignments} "
        f"WHEN NOT MATCHED AND s.{OP} = 'U' THEN INSERT ({names}) VALUES ({values})"
    )


# One fold per aggregate kind: what it measures of a group's change, and how it folds that into
# the group's old state columns.


def _changed_name(measure: str, slot: str) -> str:
    """Suffixed with the aggregate's slot, as several aggregates may share a kind."""
    return hidden(f"d_{measure}_{slot}")


def _changed(measure: str, slot: str) -> SparkColumn:
    return F.col(_changed_name(measure, slot))


def _old_name(name: str) -> str:
    """Prefixed, as the table's old row is joined beside the change measures of the same group."""
    return hidden(f"o_{name}")


def _old(name: str) -> SparkColumn:
    return col(_old_name(name))


def _plus_change(old_column: str, measure: str, slot: str) -> SparkColumn:
    """The old value plus the change's, where a new group or a change without such rows adds 0."""
    old = F.coalesce(_old(old_column), F.lit(0))
    return old + F.coalesce(_changed(measure, slot), F.lit(0))


@dataclass(frozen=True)
class _Group:
    """What every fold reads of an affected group: its rows after the change, the column types."""

    rows: SparkColumn
    types: dict[str, DataType]


@dataclass(frozen=True)
class _Folded:
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


def _fold_count_star(aggregate: Aggregate, name: str, group: _Group) -> _Folded:
    """COUNT(*) is the group's row count, which every aggregate table keeps anyway."""
    return _Folded({name: group.rows})


def _fold_count(aggregate: Aggregate, name: str, group: _Group) -> _Folded:
    """COUNT is its own non-NULL count, so it needs no hidden column."""
    return _Folded({name: _plus_change(name, "nn", aggregate.slot)})


def _fold_sum(aggregate: Aggregate, name: str, group: _Group) -> _Folded:
    """The hidden non-NULL count tells a sum of 0 from the NULL of a group without values."""
    non_null = _plus_change(aggregate.nn, "nn", aggregate.slot)
    total = _plus_change(name, "sum", aggregate.slot)
    return _Folded(
        {aggregate.nn: non_null, name: F.when(non_null > 0, total.cast(group.types[name]))}
    )


def _fold_avg(aggregate: Aggregate, name: str, group: _Group) -> _Folded:
    """Averages do not add up, so the hidden sum and non-NULL count are folded and divided."""
    non_null = _plus_change(aggregate.nn, "nn", aggregate.slot)
    total = _plus_change(aggregate.sum, "sum", aggregate.slot).cast(group.types[aggregate.sum])
    if isinstance(group.types[name], DecimalType):
        average = (total / non_null.cast("decimal(20,0)")).cast(group.types[name])
    else:
        average = total.cast("double") / non_null.cast("double")
    return _Folded(
        {aggregate.nn: non_null, aggregate.sum: total, name: F.when(non_null > 0, average)}
    )


def _fold_recomputed(aggregate: Aggregate, name: str, group: _Group) -> _Folded:
    """Distinct counts and floating-point sums cannot follow changes: the group is recomputed."""
    columns = [name, *(hidden for hidden, _ in aggregate.hidden())]
    return _Folded({column: F.lit(None) for column in columns}, F.lit(True))


@dataclass(frozen=True)
class _Extreme:
    """MIN and MAX fold alike, told apart only by which way their values compare."""

    pick: Callable[[SparkColumn], SparkColumn]  # over a group's rows: F.min or F.max
    combine: Callable[..., SparkColumn]  # across columns: F.least or F.greatest
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

    def fold(self, aggregate: Aggregate, name: str, group: _Group) -> _Folded:
        """Losing the old extreme leaves the next one unknown, unless a gain reaches it again."""
        gained = _changed("in", aggregate.slot)
        lost = _changed("out", aggregate.slot)
        recompute = (
            lost.isNotNull()
            & F.coalesce(self.reaches(lost, _old(name)), F.lit(True))
            & ~F.coalesce(self.reaches(gained, _old(name)), F.lit(False))
        )
        return _Folded({name: self.combine(_old(name), gained)}, recompute)


_Measures = Callable[[Aggregate, SparkColumn, SparkColumn], list[SparkColumn]]
_Fold = Callable[[Aggregate, str, _Group], _Folded]


@dataclass(frozen=True)
class _Rule:
    """How one aggregate kind follows changes: what it measures of them, how it folds them in."""

    measures: _Measures
    fold: _Fold


_MIN = _Extreme(F.min, F.least, operator.le)
_MAX = _Extreme(F.max, F.greatest, operator.ge)
_RULES: dict[str, _Rule] = {
    COUNT_STAR: _Rule(_no_measures, _fold_count_star),
    COUNT: _Rule(_count_measures, _fold_count),
    COUNT_DISTINCT: _Rule(_count_measures, _fold_recomputed),
    SUM: _Rule(_sum_measures, _fold_sum),
    AVG: _Rule(_sum_measures, _fold_avg),
    MIN: _Rule(_MIN.measures, _MIN.fold),
    MAX: _Rule(_MAX.measures, _MAX.fold),
}


def _fold_for(aggregate: Aggregate, argument_types: dict[str, DataType]) -> _Fold:
    """Floating-point sums drift as values come and go, so those groups are recomputed instead."""
    if aggregate.kind in (SUM, AVG) and _floating(aggregate, argument_types):
        return _fold_recomputed
    return _RULES[aggregate.kind].fold
