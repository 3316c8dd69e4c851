"""Incremental maintenance of a dynamic table from its sources' change data feeds.

Every source change becomes a signed bag of rows (+1 inserted, -1 deleted, netted per row). The
change of a join of references R1…Rn is Σ_j new(R1…Rj-1) ⋈ ΔRj ⋈ old(Rj+1…Rn), so a projection,
filter or inner join (and UNION ALL of those) yields the signed rows its result gains and loses.
Aggregates fold those rows into their groups: COUNT, SUM and AVG from hidden state columns, MIN and
MAX too unless a deleted value reached the old extreme and no added value reached it again, in
which case the group (like any group of a COUNT(DISTINCT) or a floating-point SUM/AVG) is
recomputed from the sources alone."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, DoubleType, FloatType, StructType
from sqlglot import exp

from lake_assets.core.delta import delta_ref, quote_name
from lake_assets.dynamic_tables import pruning
from lake_assets.dynamic_tables.plan import (
    AVG,
    COUNT,
    COUNT_DISTINCT,
    COUNT_STAR,
    MAX,
    MIN,
    ROWS,
    SUM,
    Plan,
    argument_column,
    key_column,
    pre_aggregation,
    references,
    restricted,
    rewrite,
    with_hidden,
)

MULT = "__lake_mult"
OP = "__lake_op"
_CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_MERGE_SOURCE = "__lake_merge"
# Lost rows up to this many values are broadcast to the read counting their copies, instead of
# shuffling the (pruned) table: about 20 MB. Incremental plans are static (no adaptive execution).
_BROADCAST_CELLS = 2_000_000
# The keys of the groups the last aggregate refresh recomputed from its sources.
RECOMPUTE_KEYS = "__lake_recompute"


@dataclass(frozen=True)
class SourceRead:
    """One source of a refresh: the version read now and the one the last refresh read."""

    name: str
    location: str
    columns: tuple[str, ...] | None
    version: int
    previous: int | None
    index: int

    @property
    def changed(self) -> bool:
        return self.previous != self.version

    def view(self, kind: str) -> str:
        """Temporary view of this source: `new`, `old`, `pos` (rows gained) or `neg` (lost)."""
        return f"__lake_source_{self.index}_{kind}"


def col(name: str) -> SparkColumn:
    return F.col(quote_name(name))


def _at(spark: SparkSession, read: SourceRead, version: int) -> DataFrame:
    frame = spark.read.format("delta").option("versionAsOf", version).load(read.location)
    return frame.select(*map(col, read.columns)) if read.columns else frame


def net_changes(spark: SparkSession, read: SourceRead) -> DataFrame:
    """The source's rows gained (+n) and lost (-n) since the last refresh, netted per row: a
    row written and changed again in between never reaches the query (its CASTs may reject it)."""
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", int(read.previous or 0) + 1)
        .option("endingVersion", read.version)
        .load(read.location)
    )
    columns = list(read.columns or [c for c in feed.columns if c not in _CDF_COLUMNS])
    sign = F.when(F.col("_change_type").isin("insert", "update_postimage"), 1).otherwise(-1)
    return (
        feed.select(*map(col, columns), sign.alias(MULT))
        .groupBy(*map(col, columns))
        .agg(F.sum(MULT).alias(MULT))
        .filter(F.col(MULT) != 0)
    )


def _copies(frame: DataFrame, count: SparkColumn, columns: list[str]) -> DataFrame:
    """Each row repeated `count` times (count ≥ 1)."""
    copy = F.explode(F.sequence(F.lit(1), count)).alias("__lake_copy")
    return frame.select(*map(col, columns), copy).drop("__lake_copy")


def register_sources(spark: SparkSession, reads: list[SourceRead], changes: bool) -> None:
    """Views of each source now, and with `changes` also its rows gained and lost since the
    last refresh (the source as last read is registered only when a join needs it)."""
    for read in reads:
        _at(spark, read, read.version).createOrReplaceTempView(read.view("new"))
        if changes and read.changed:
            net = net_changes(spark, read)
            columns = [c for c in net.columns if c != MULT]
            gained = net.filter(F.col(MULT) > 0)
            lost = net.filter(F.col(MULT) < 0)
            _copies(gained, F.col(MULT), columns).createOrReplaceTempView(read.view("pos"))
            _copies(lost, -F.col(MULT), columns).createOrReplaceTempView(read.view("neg"))


def full_result(
    spark: SparkSession,
    plan: Plan,
    query: exp.Expression,
    reads: dict[str, SourceRead],
    names: list[str],
) -> DataFrame:
    """The query over the sources as read now, with the plan's hidden columns, named `names`."""
    sql = rewrite(with_hidden(plan, query), lambda _, name: _view_or_self(reads, name, "new"))
    return spark.sql(sql).toDF(*names)


def _view_or_self(reads: dict[str, SourceRead], name: str, kind: str) -> str:
    return reads[name].view(kind) if name in reads else name


def _view_as_last_read(spark: SparkSession, read: SourceRead, registered: set[str]) -> str:
    """The source as the last refresh read it, registered on first use: only joins read it."""
    if read.name not in registered:
        _at(spark, read, int(read.previous or 0)).createOrReplaceTempView(read.view("old"))
        registered.add(read.name)
    return read.view("old")


def row_changes(
    spark: SparkSession,
    branches: tuple[exp.Select, ...],
    reads: dict[str, SourceRead],
    names: list[str],
    clustered_by: tuple[str, ...] = (),
) -> DataFrame:
    """The signed rows (`names` + MULT) the branches' result gains and loses, netted; hash
    partitioned by `clustered_by` when given, so that grouping by those needs no more shuffle."""
    parts: list[DataFrame] = []
    registered: set[str] = set()
    for branch in branches:
        refs = [table.name.lower() for table in references(branch)]
        for j, name in enumerate(refs):
            if not reads[name].changed:
                continue
            for sign, kind in ((1, "pos"), (-1, "neg")):

                def relation(index: int, table: str, j: int = j, kind: str = kind) -> str:
                    read = reads[table]
                    if index == j:
                        return read.view(kind)
                    if index > j and read.changed:
                        return _view_as_last_read(spark, read, registered)
                    return read.view("new")

                frame = spark.sql(rewrite(branch, relation)).toDF(*names)
                parts.append(frame.withColumn(MULT, F.lit(sign)))
    combined = reduce(DataFrame.unionAll, parts)
    if clustered_by:
        combined = combined.repartition(*map(col, clustered_by))
    return combined.groupBy(*map(col, names)).agg(F.sum(MULT).alias(MULT)).filter(F.col(MULT) != 0)


def _may_recompute(plan: Plan, argument_types: dict[str, DataType]) -> bool:
    """Whether any group can need recomputing: MIN/MAX, COUNT(DISTINCT), floating SUM/AVG."""
    return any(
        a.kind in (MIN, MAX, COUNT_DISTINCT)
        or (
            a.kind in (SUM, AVG)
            and isinstance(argument_types.get(argument_column(a.position)), DoubleType | FloatType)
        )
        for a in plan.aggregates
    )


def _null_safe(left: str, right: str, columns: list[str]) -> str:
    return (
        " AND ".join(f"{left}.{quote_name(c)} <=> {right}.{quote_name(c)}" for c in columns)
        or "TRUE"
    )


def table_at(spark: SparkSession, location: str, version: int) -> DataFrame:
    return spark.read.format("delta").option("versionAsOf", version).load(location)


def projection_merge(
    spark: SparkSession, location: str, version: int, changes: DataFrame, schema: StructType
) -> str | None:
    """Register the MERGE source for a projection's row changes; return the MERGE, or None
    when only rows are gained (then appending `gained_rows` is the cheaper write)."""
    names = [field.name for field in schema.fields]
    typed = changes.select(
        *[col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields], F.col(MULT)
    )
    lost = typed.filter(F.col(MULT) < 0)
    lost_rows = lost.count()
    if lost_rows == 0:
        return None
    wanted = lost.select(*map(col, names))
    if lost_rows * len(names) <= _BROADCAST_CELLS:
        wanted = F.broadcast(wanted)
    where = pruning.ranges(lost, schema.fields)
    current = table_at(spark, location, version)
    if where is not None:
        current = current.where(where.sql())
    counts = (
        current.join(
            wanted.alias("l"),
            on=[current[quote_name(c)].eqNullSafe(F.col(f"l.{quote_name(c)}")) for c in names],
            how="left_semi",
        )
        .groupBy(*map(col, names))
        .agg(F.count(F.lit(1)).alias("__lake_have"))
    )
    kept = (
        lost.alias("l")
        .join(
            counts.alias("c"),
            on=[F.col(f"l.{quote_name(c)}").eqNullSafe(F.col(f"c.{quote_name(c)}")) for c in names],
            how="left",
        )
        .select(
            *[F.col(f"l.{quote_name(c)}").alias(c) for c in names],
            (F.coalesce(F.col("c.__lake_have"), F.lit(0)) + F.col(f"l.{MULT}")).alias(MULT),
        )
    )
    removals = lost.select(*map(col, names)).withColumn(OP, F.lit("D"))
    re_added = _copies(kept.filter(F.col(MULT) > 0), F.col(MULT), names)
    added = _copies(typed.filter(F.col(MULT) > 0), F.col(MULT), names)
    inserts = re_added.unionAll(added).withColumn(OP, F.lit("I"))
    removals.unionAll(inserts).localCheckpoint().createOrReplaceTempView(_MERGE_SOURCE)
    columns = ", ".join(map(quote_name, names))
    values = ", ".join(f"s.{quote_name(c)}" for c in names)
    pruned = f"{where.sql('t')} AND " if where is not None else ""
    return (
        f"MERGE INTO {delta_ref(location)} AS t USING {_MERGE_SOURCE} AS s "
        f"ON s.{OP} = 'D' AND {pruned}{_null_safe('t', 's', names)} "
        f"WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND s.{OP} = 'I' THEN INSERT ({columns}) VALUES ({values})"
    )


def gained_rows(changes: DataFrame, schema: StructType) -> DataFrame:
    """The rows to append when a projection only gains rows."""
    names = [field.name for field in schema.fields]
    typed = changes.select(
        *[col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields], F.col(MULT)
    )
    return _copies(typed, F.col(MULT), names)


def aggregate_merge(
    spark: SparkSession,
    plan: Plan,
    query: exp.Expression,
    reads: dict[str, SourceRead],
    location: str,
    version: int,
    schema: StructType,
    visible: list[str],
) -> str:
    """Register the MERGE source that brings the affected groups up to date; return the MERGE."""
    input_names = [key_column(p) for p, _ in plan.keys] + [
        argument_column(a.position) for a in plan.aggregates if a.argument is not None
    ]
    keys = [key_column(p) for p, _ in plan.keys]
    # Netted and grouped after one shuffle: rows are netted within their group's partition.
    delta = row_changes(spark, (pre_aggregation(plan),), reads, input_names, tuple(keys))
    m = F.col(MULT)
    types = {field.name: field.dataType for field in schema.fields}
    argument_types = {f.name: f.dataType for f in delta.schema.fields}
    measures = [F.sum(m).alias("__d_rows")]
    for a in plan.aggregates:
        if a.argument is None:
            continue
        value = col(argument_column(a.position))
        measures.append(
            F.sum(F.when(value.isNotNull(), m).otherwise(0)).alias(f"__d_nn{a.position}")
        )
        if a.kind in (SUM, AVG):
            measures.append(F.sum(value * m.cast("int")).alias(f"__d_sum{a.position}"))
        if a.kind in (MIN, MAX):
            pick = F.min if a.kind == MIN else F.max
            measures.append(pick(F.when(m > 0, value)).alias(f"__d_in{a.position}"))
            measures.append(pick(F.when(m < 0, value)).alias(f"__d_out{a.position}"))
    groups = delta.groupBy(*map(col, keys)).agg(*measures).alias("g")
    old = table_at(spark, location, version)
    old = old.select(*[col(c).alias(f"__o_{c}") for c in old.columns]).alias("o")
    key_names = [visible[p] for p, _ in plan.keys]
    joined = groups.join(
        old,
        on=[col(k).eqNullSafe(col(f"__o_{name}")) for k, name in zip(keys, key_names, strict=True)],
        how="left",
    )

    def o(name: str) -> SparkColumn:
        return col(f"__o_{name}")

    rows = F.coalesce(o(ROWS), F.lit(0)) + F.col("__d_rows")
    existed = o(ROWS).isNotNull()
    values: dict[str, SparkColumn] = {name: col(k) for k, name in zip(keys, key_names, strict=True)}
    values[ROWS] = rows
    recompute = F.lit(False)
    for a in plan.aggregates:
        name, p = visible[a.position], a.position
        counted = o(a.nn) if a.kind in (SUM, AVG) else o(name)
        nn = F.coalesce(counted, F.lit(0)) + F.coalesce(F.col(f"__d_nn{p}"), F.lit(0))
        exact = not isinstance(argument_types.get(argument_column(p)), DoubleType | FloatType)
        if a.kind == COUNT_STAR:
            values[name] = rows
        elif a.kind == COUNT:
            values[name] = nn
        elif a.kind == COUNT_DISTINCT or (not exact and a.kind in (SUM, AVG)):
            recompute = recompute | F.lit(True)
            values[name] = F.lit(None)
            if a.kind in (SUM, AVG):
                values[a.nn] = F.lit(None)
            if a.kind == AVG:
                values[a.sum] = F.lit(None)
        elif a.kind == SUM:
            values[a.nn] = nn
            total = F.coalesce(o(name), F.lit(0)) + F.coalesce(F.col(f"__d_sum{p}"), F.lit(0))
            values[name] = F.when(nn > 0, total.cast(types[name]))
        elif a.kind == AVG:
            values[a.nn] = nn
            total = (
                F.coalesce(o(a.sum), F.lit(0)) + F.coalesce(F.col(f"__d_sum{p}"), F.lit(0))
            ).cast(types[a.sum])
            values[a.sum] = total
            if isinstance(types[name], DecimalType):
                average = (total / nn.cast("decimal(20,0)")).cast(types[name])
            else:
                average = total.cast("double") / nn.cast("double")
            values[name] = F.when(nn > 0, average)
        else:
            gained, lost = F.col(f"__d_in{p}"), F.col(f"__d_out{p}")
            extreme = F.least if a.kind == MIN else F.greatest
            reached = lost <= o(name) if a.kind == MIN else lost >= o(name)
            # A gained value at or past the old extreme is the new extreme, whatever was lost.
            regained = gained <= o(name) if a.kind == MIN else gained >= o(name)
            recompute = recompute | (
                lost.isNotNull()
                & F.coalesce(reached, F.lit(True))
                & ~F.coalesce(regained, F.lit(False))
            )
            values[name] = extreme(o(name), gained)
    columns = [field.name for field in schema.fields]
    # Computed once, here: the checks and the MERGE below read this small result, not its plan.
    state = joined.select(
        *[values[c].cast(types[c]).alias(c) for c in columns],
        existed.alias("__existed"),
        recompute.alias("__recompute"),
    ).localCheckpoint()
    removed = state.filter((F.col(ROWS) == 0) & F.col("__existed")).withColumn(OP, F.lit("D"))
    folded = state.filter((F.col(ROWS) > 0) & ~F.col("__recompute")).withColumn(OP, F.lit("U"))
    again = state.filter((F.col(ROWS) > 0) & F.col("__recompute"))
    again.select(
        *[col(name).alias(k) for k, name in zip(keys, key_names, strict=True)]
    ).createOrReplaceTempView(RECOMPUTE_KEYS)
    merge_columns = [*columns, OP]
    source = removed.select(*merge_columns).unionAll(folded.select(*merge_columns))
    if _may_recompute(plan, argument_types) and not again.isEmpty():
        recomputed_sql = rewrite(
            restricted(plan, with_hidden(plan, query), RECOMPUTE_KEYS),
            lambda _, table: _view_or_self(reads, table, "new"),
        )
        recomputed = spark.sql(recomputed_sql).toDF(*columns).withColumn(OP, F.lit("U"))
        source = source.unionAll(recomputed).localCheckpoint()
    source.createOrReplaceTempView(_MERGE_SOURCE)
    on = _null_safe("t", "s", key_names)
    assignments = ", ".join(f"t.{quote_name(c)} = s.{quote_name(c)}" for c in columns)
    names = ", ".join(map(quote_name, columns))
    values_sql = ", ".join(f"s.{quote_name(c)}" for c in columns)
    merge = (
        f"MERGE INTO {delta_ref(location)} AS t USING {_MERGE_SOURCE} AS s ON {on} "
        f"WHEN MATCHED AND s.{OP} = 'D' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {assignments} "
        f"WHEN NOT MATCHED AND s.{OP} = 'U' THEN INSERT ({names}) VALUES ({values_sql})"
    )
    return merge
