"""The incremental refresh of an aggregate: the changed rows are grouped, each aggregate kind
folds its change into the hidden per-group state (one rule per kind, see aggregate_folds), and
groups whose state cannot absorb the change are recomputed from the sources; one MERGE applies
the result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType
from sqlglot import exp

from lake_assets.core.delta import Commit, quote_name
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.analyses import folds
from lake_assets.dynamic_tables.analyses.folds import AVG, COUNT_DISTINCT, MAX, MIN, SUM
from lake_assets.dynamic_tables.operators.aggregate_folds import (
    RULES,
    Group,
    floating,
    fold_for,
    old_name,
    old_value,
)
from lake_assets.dynamic_tables.operators.base import Classify, Line, Operator, Root
from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.operators.branches import branch, row_changes
from lake_assets.dynamic_tables.operators.inner_join import InnerJoin
from lake_assets.dynamic_tables.operators.recompute import RecomputeByKey, keyed
from lake_assets.dynamic_tables.runtime.by_key import Touched, read_now
from lake_assets.dynamic_tables.runtime.netting import MULT, col
from lake_assets.dynamic_tables.runtime.queries import (
    ROW_MARK,
    argument_column,
    key_column,
    pre_aggregation,
    references,
)
from lake_assets.dynamic_tables.runtime.sources import (
    Changes,
    null_safe,
    only_gained,
)
from lake_assets.dynamic_tables.runtime.writing import OP, Write
from lake_assets.sql.types import same

ROWS = hidden("rows")
_FOLDED = "folded into the group's hidden state"
_RULE_TEXT = {
    MIN: "folded; a group whose extreme was deleted is recomputed",
    MAX: "folded; a group whose extreme was deleted is recomputed",
    COUNT_DISTINCT: "the groups the change touches are recomputed",
}


@dataclass(frozen=True)
class Aggregate(Root):
    """`select`'s groups (its `keys` by position), each aggregate folded into hidden state
    columns, and `expressions` (items combining aggregates) computed from their values; the
    rows grouped change by `branch` (the select's rows before grouping, see pre_aggregation)."""

    select: exp.Select
    keys: tuple[tuple[int, exp.Expr], ...]
    aggregates: tuple[folds.Aggregate, ...]
    expressions: tuple[tuple[int, exp.Expr], ...]
    branch: Branch

    @property
    def children(self) -> tuple[Operator, ...]:
        return (self.branch,)

    @property
    def label(self) -> str:
        group = self.select.args.get("group")
        keys = ", ".join(e.sql(dialect="spark") for e in group.expressions) if group else "()"
        return f"Aggregate GROUP BY {keys}"

    @property
    def rule(self) -> str:
        return "groups touched by the change"

    @property
    def hidden(self) -> tuple[str, ...]:
        return (ROWS, *(name for a in self.aggregates for name, _ in a.hidden()))

    @property
    def deletion_vectors(self) -> bool:
        return False

    @property
    def reads_only_changes(self) -> bool:
        """Of one table: its change and the table's groups."""
        return len(references(self.select)) == 1

    def stateful(self, query: exp.Expr) -> exp.Expr:
        if not isinstance(query, exp.Select):
            return query
        extra = [exp.alias_(exp.Count(this=exp.Star()), ROWS)]
        extra += [exp.alias_(agg, name) for a in self.aggregates for name, agg in a.hidden()]
        return query.copy().select(*extra, copy=False)

    def lines(self, depth: int = 0) -> Iterator[Line]:
        yield Line(depth, self.label, self.rule)
        for position, _ in self.expressions:
            item = self.select.expressions[position].unalias().sql(dialect="spark")
            yield Line(depth + 1, f"Project {item}", "computed from its aggregates' folded values")
        for aggregate in self.aggregates:
            rule = _RULE_TEXT.get(aggregate.kind, _FOLDED)
            if aggregate.kind in (SUM, AVG):
                rule += " (of floating-point values: the groups touched are recomputed)"
            yield Line(depth + 1, f"agg {aggregate.call.sql(dialect='spark')}", rule)
        yield from self.branch.lines(depth + 1)

    def write(self, job: Write) -> Commit:
        return _merge(self, job)


RECOMPUTE_KEYS = hidden("recompute")
_CHANGED_ROWS = hidden("changed_rows")
_EXISTED = hidden("existed")
_RECOMPUTE = hidden("recompute_group")


def _may_recompute(node: Aggregate, argument_types: dict[str, DataType], gained: bool) -> bool:
    """Whether any group can need recomputing: COUNT(DISTINCT), floating SUM/AVG, MIN/MAX
    unless the rows aggregated were only `gained` (no extreme lost), and a group emptied."""
    extremes = () if gained else (MIN, MAX)
    return (not node.keys and not gained) or any(
        a.kind in (*extremes, COUNT_DISTINCT)
        or (a.kind in (SUM, AVG) and floating(a, argument_types))
        for a in node.aggregates
    )


def _only_gained(changes: Changes, node: Aggregate) -> bool:
    """Whether the rows aggregated were only gained: the sources only gained rows, and the
    rows read from them by inner joins alone, which gain no row from another's loss."""
    return isinstance(node.branch, InnerJoin) and only_gained(changes.spark, changes.reads.values())


def _merge(node: Aggregate, job: Write) -> Commit:
    """One MERGE brings the affected groups up to date: emptied ones deleted, folded and
    recomputed ones written."""
    visible, env = job.visible, job.changes()
    held = job.held()
    schema = held.schema
    keys = {key_column(position): visible[position] for position, _ in node.keys}
    types = {field.name: field.dataType for field in schema.fields}
    changes, argument_types = _group_changes(env, node, list(keys))
    old = held.select(*[col(c).alias(old_name(c)) for c in held.columns]).alias("o")
    matches = [
        same(f"g.{quote_name(key)}", f"o.{quote_name(old_name(name))}", types[name])
        for key, name in keys.items()
    ]
    joined = changes.join(old, on=F.expr(" AND ".join(matches) or "TRUE"), how="left")
    columns = [field.name for field in schema.fields]
    state = _new_state(node, joined, schema, visible, argument_types)
    rows = F.col(ROWS)
    emptied, recompute = (rows == 0) & F.col(_EXISTED), (rows > 0) & F.col(_RECOMPUTE)
    if not node.keys:
        # An aggregate without GROUP BY answers one row even of no rows (COUNT 0, SUM NULL):
        # emptied, that row is recomputed rather than deleted.
        emptied, recompute = F.lit(False), recompute | (rows == 0)
    removed = state.filter(emptied).withColumn(OP, F.lit("D"))
    updated = state.filter((rows > 0) & ~F.col(_RECOMPUTE)).withColumn(OP, F.lit("U"))
    to_recompute = state.filter(recompute)
    recompute_keys = to_recompute.select(*[col(name).alias(key) for key, name in keys.items()])
    merge_columns = [*columns, OP]
    source = removed.select(*merge_columns).unionAll(updated.select(*merge_columns))
    may_recompute = _may_recompute(node, argument_types, _only_gained(env, node))
    if may_recompute and not to_recompute.isEmpty():
        touched = Touched.held(recompute_keys, RECOMPUTE_KEYS, distinct=False)  # state is computed
        recomputed = _recomputed_groups(env, node, columns, touched)
        source = source.unionAll(recomputed).localCheckpoint()
    job.judge(source.where(F.col(OP) != "D"))
    key_fields = [field for field in schema.fields if field.name in keys.values()]
    assignments = ", ".join(f"t.{quote_name(c)} = s.{quote_name(c)}" for c in columns)
    names = ", ".join(map(quote_name, columns))
    values = ", ".join(f"s.{quote_name(c)}" for c in columns)
    return job.merge(
        source,
        null_safe("t", "s", key_fields),
        f"WHEN MATCHED AND s.{OP} = 'D' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {assignments} "
        f"WHEN NOT MATCHED AND s.{OP} = 'U' THEN INSERT ({names}) VALUES ({values})",
    )


def _group_changes(
    env: Changes, node: Aggregate, keys: list[str]
) -> tuple[DataFrame, dict[str, DataType]]:
    """Each affected group's change measures, and the argument types that decide how it folds."""
    arguments = [argument_column(a.slot) for a in node.aggregates if a.argument is not None]
    # Netted and grouped after one shuffle: rows are netted within their group's partition.
    names = [*keys, *arguments] or [ROW_MARK]
    changes = row_changes(env, (node.branch,), names, tuple(keys))
    argument_types = {field.name: field.dataType for field in changes.schema.fields}
    multiplicity = F.col(MULT)
    measures = [F.sum(multiplicity).alias(_CHANGED_ROWS)]
    for aggregate in node.aggregates:
        value = col(argument_column(aggregate.slot))
        measures += RULES[aggregate.kind].measures(aggregate, value, multiplicity)
    return changes.groupBy(*map(col, keys)).agg(*measures).alias("g"), argument_types


def _new_state(
    node: Aggregate,
    joined: DataFrame,
    schema: StructType,
    visible: list[str],
    argument_types: dict[str, DataType],
) -> DataFrame:
    """Each group's new row, checkpointed: the checks and the MERGE read it, not its node."""
    types = {field.name: field.dataType for field in schema.fields}
    group = Group(rows=F.coalesce(old_value(ROWS), F.lit(0)) + F.col(_CHANGED_ROWS), types=types)
    values = {visible[position]: col(key_column(position)) for position, _ in node.keys}
    values[ROWS] = group.rows
    recompute = F.lit(False)
    for aggregate in node.aggregates:
        fold = fold_for(aggregate, argument_types)
        folded = fold(aggregate, aggregate.value or visible[aggregate.position], group)
        values.update(folded.columns)
        if folded.recompute is not None:
            recompute = recompute | folded.recompute
    flags = [old_value(ROWS).isNotNull().alias(_EXISTED), recompute.alias(_RECOMPUTE)]
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
        for position, expression in node.expressions
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
    env: Changes, node: Aggregate, columns: list[str], touched: Touched
) -> DataFrame:
    """The groups no fold could follow, from the query itself, reading only their own rows."""
    keys = [(key_column(position), key) for position, key in node.keys]
    restricted = node.stateful(node.select)
    if keys:
        restricted = touched.restricted(restricted, keys)
    return read_now(env, restricted).toDF(*columns).withColumn(OP, F.lit("U"))


def lower(query: exp.Expr, classify: Classify) -> Aggregate | RecomputeByKey | str | None:
    """A SELECT of aggregates: folded group by group, else recomputed by its GROUP BY keys, else
    why it is refreshed in full."""
    if not isinstance(query, exp.Select) or not folds.is_aggregate(query):
        return None
    lowered = _folded(query)
    return (keyed(query) or lowered) if isinstance(lowered, str) else lowered


def _folded(select: exp.Select) -> Aggregate | str:
    """A group is updated from its own changed rows only when its keys are all selected."""
    group = select.args.get("group")
    problem = folds.grouping_problem(group)
    if problem:
        return problem
    items = [item.unalias() for item in select.expressions]
    listed = folds.select_list(items)
    if isinstance(listed, str):
        return listed
    keys, aggregates, expressions = listed
    if group is None and keys:
        return "an aggregate without GROUP BY selects only aggregates"
    if group is not None:
        problem = folds.group_by_problem(select, items, keys)
        if problem:
            return problem
    read: Branch = branch(pre_aggregation(select, keys, aggregates))
    return Aggregate(select, tuple(keys), tuple(aggregates), tuple(expressions), read)
