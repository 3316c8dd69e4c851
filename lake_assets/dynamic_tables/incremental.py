"""Incremental maintenance of a dynamic table from its sources' change data feeds.

Every source change becomes a signed bag of rows (+1 inserted, -1 deleted, netted per row). The
change of a join of references R1…Rn is Σ_j new(R1…Rj-1) ⋈ ΔRj ⋈ old(Rj+1…Rn), so a projection,
filter or inner join (and UNION ALL of those) yields the signed rows its result gains and loses;
a query whose rows of one key value come from source rows of that value (outer, semi and anti
joins, subqueries, a derived table with a key) yields its rows of the keys the change touches,
now less as last read. Aggregates fold those rows into their groups: COUNT, SUM and AVG from
hidden state columns, MIN and MAX too unless a deleted value reached the old extreme and no added
value reached it again, in which case the group (like any group of a COUNT(DISTINCT) or a
floating-point SUM/AVG) is recomputed from the sources alone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType
from sqlglot import exp

from lake_assets.core.delta import commits_from, delta_ref, quote_name
from lake_assets.core.delta import row_changes as delta_row_changes
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables import pruning
from lake_assets.dynamic_tables.keys import JoinKey, Parameter, join_key, key_of
from lake_assets.dynamic_tables.plan import Plan, key_name
from lake_assets.dynamic_tables.queries import (
    key_rows,
    keys_restricted,
    references,
    rewrite,
    with_hidden,
)
from lake_assets.dynamic_tables.shapes import by_join_key, derived_table
from lake_assets.sql.types import same

MULT = hidden("mult")
OP = hidden("op")
_CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
MERGE_SOURCE = hidden("merge")
# Lost rows up to this many values are broadcast to the read counting their copies, instead of
# shuffling the (pruned) table: about 20 MB. Incremental plans are static (no adaptive execution).
_BROADCAST_CELLS = 2_000_000
# The keys of the groups the last aggregate refresh recomputed from its sources.
# Columns of an aggregate refresh's new group state: the change's row count, whether the group
# was in the table, whether a fold gave up on it.


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
        return hidden(f"source_{self.index}_{kind}")


def commit_changes(spark: SparkSession, read: SourceRead) -> list[tuple[int, int, int]] | None:
    """The rows (inserted, updated, deleted) of each commit to the source since the last
    refresh, from their metrics (no Spark job); None when a commit does not say."""
    changes = []
    for commit in commits_from(spark, read.location, int(read.previous or 0) + 1):
        if commit.version > read.version:
            break
        counted = delta_row_changes(commit.operation or "", commit.operation_metrics)
        if counted is None:
            return None
        changes.append(counted)
    return changes


def only_gained(spark: SparkSession, reads: Iterable[SourceRead]) -> bool:
    """Whether the sources only gained rows since the last refresh (appends alone)."""
    for read in reads:
        changes = commit_changes(spark, read) if read.changed else []
        if changes is None or any(updated or deleted for _, updated, deleted in changes):
            return False
    return True


def col(name: str) -> SparkColumn:
    return F.col(quote_name(name))


def _at(spark: SparkSession, read: SourceRead, version: int) -> DataFrame:
    frame = spark.read.format("delta").option("versionAsOf", version).load(read.location)
    return frame.select(*map(col, read.columns)) if read.columns else frame


def free_name(name: str, taken: Iterable[str]) -> str:
    """`name`, with underscores appended while a column of `taken` has it: a source's own
    columns (from a file's schema, say) may use the hidden prefix too."""
    lowered = {column.lower() for column in taken}
    while name.lower() in lowered:
        name += "_"
    return name


def net_changes(spark: SparkSession, read: SourceRead) -> tuple[DataFrame, str]:
    """The source's rows gained (+n) and lost (-n) since the last refresh, netted per row, and
    the name of the column holding n: a row written and changed again in between never reaches
    the query (its CASTs may reject it)."""
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", int(read.previous or 0) + 1)
        .option("endingVersion", read.version)
        .load(read.location)
    )
    columns = list(read.columns or [c for c in feed.columns if c not in _CDF_COLUMNS])
    multiplicity = free_name(MULT, columns)
    sign = F.when(F.col("_change_type").isin("insert", "update_postimage"), 1).otherwise(-1)
    net = (
        feed.select(*map(col, columns), sign.alias(multiplicity))
        .groupBy(*map(col, columns))
        .agg(F.sum(col(multiplicity)).alias(multiplicity))
        .filter(col(multiplicity) != 0)
    )
    return net, multiplicity


def _copies(frame: DataFrame, count: SparkColumn, columns: list[str]) -> DataFrame:
    """Each row repeated `count` times (count ≥ 1)."""
    copy = free_name(hidden("copy"), columns)
    repeated = F.explode(F.sequence(F.lit(1), count)).alias(copy)
    return frame.select(*map(col, columns), repeated).drop(copy)


def register_sources(spark: SparkSession, reads: list[SourceRead], changes: bool) -> None:
    """Views of each source now, and with `changes` also its rows gained and lost since the
    last refresh (the source as last read is registered only when a join needs it)."""
    for read in reads:
        _at(spark, read, read.version).createOrReplaceTempView(read.view("new"))
        if changes and read.changed:
            net, multiplicity = net_changes(spark, read)
            columns = [c for c in net.columns if c != multiplicity]
            count = col(multiplicity)
            gained = _copies(net.filter(count > 0), count, columns)
            lost = _copies(net.filter(count < 0), -count, columns)
            gained.createOrReplaceTempView(read.view("pos"))
            lost.createOrReplaceTempView(read.view("neg"))


def full_result(
    spark: SparkSession,
    plan: Plan,
    query: exp.Expr,
    reads: dict[str, SourceRead],
    names: list[str],
) -> DataFrame:
    """The query over the sources as read now, with the plan's hidden columns, named `names`."""
    sql = rewrite(with_hidden(plan, query), lambda _, name: view_or_self(reads, name, "new"))
    return spark.sql(sql).toDF(*names)


def view_or_self(reads: dict[str, SourceRead], name: str, kind: str) -> str:
    return reads[name].view(kind) if name in reads else name


def _view_as_last_read(spark: SparkSession, read: SourceRead, registered: set[str]) -> str:
    """The source as the last refresh read it, registered on first use: only joins read it."""
    if read.name not in registered:
        _at(spark, read, int(read.previous or 0)).createOrReplaceTempView(read.view("old"))
        registered.add(read.name)
    return read.view("old")


def _as_last_read(
    spark: SparkSession, reads: dict[str, SourceRead], name: str, registered: set[str]
) -> str:
    """The relation to read for `name` as the last refresh read it."""
    read = reads.get(name)
    if read is not None and read.changed:
        return _view_as_last_read(spark, read, registered)
    return view_or_self(reads, name, "new")


def signed_rows(
    spark: SparkSession,
    branches: tuple[exp.Select, ...],
    reads: dict[str, SourceRead],
    names: list[str],
) -> DataFrame:
    """The rows (`names` + MULT) the branches' result gains (+1) and loses (-1), one part per
    changed reference (the delta rule), not netted."""
    parts: list[DataFrame] = []
    registered: set[str] = set()
    for index, branch in enumerate(branches):
        derived = derived_table(branch)
        if derived is not None:
            parts += _by_derived_key(spark, branch, derived, reads, names, registered, index)
            continue
        key = join_key(branch) if by_join_key(branch) else None
        if key is not None:
            parts += _by_join_key(spark, branch, key, reads, names, registered, index)
            continue
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
    return reduce(DataFrame.unionAll, parts)


def _by_join_key(
    spark: SparkSession,
    branch: exp.Select,
    key: JoinKey,
    reads: dict[str, SourceRead],
    names: list[str],
    registered: set[str],
    index: int,
) -> list[DataFrame]:
    """Outer, semi and anti joins and subqueries: the rows of one key value come from source
    rows of that value (and the rows inner-joined to those), so the change is the branch's rows
    of the keys the changed rows reach, now (+1) less as last read (-1)."""
    column = hidden("join_key")
    touched = [
        keys.toDF(column)
        for number, parameter in enumerate(key.parameters)
        for keys in _decided_otherwise(spark, parameter, reads, registered, f"{index}_{number}")
    ]
    parameters = {alias for parameter in key.parameters for alias in parameter.aliases}
    for table in references(branch):
        read = reads[table.name.lower()]
        alias = table.alias_or_name.lower()
        if not read.changed or alias in parameters:
            continue
        for kind, others in (("pos", "new"), ("neg", "old")):
            if alias in key.columns:
                scan = exp.to_table(read.view(kind)).as_(alias)
                sql = exp.select(key.columns[alias].as_(column)).from_(scan).sql("spark")
            else:
                scope = key.scopes[alias]
                sql = _with_changed(spark, scope, alias, kind, others, reads, registered)
            touched.append(spark.sql(sql).toDF(column))
    keys = reduce(DataFrame.unionAll, touched)
    aware = [
        table
        for table in references(branch)
        if table.alias_or_name.lower() in key.null_aware and reads[table.name.lower()].changed
    ]
    if aware:
        if _null_keys_changed(spark, key, aware, reads):
            # A NULL among a NOT IN's rows decides every row: all of them are recomputed.
            return _now_less_before(spark, branch, reads, names, registered)
        # Whether a NOT IN's subquery has rows at all decides the rows whose key is NULL.
        null = F.lit(None).cast(keys.schema.fields[0].dataType).alias(column)
        keys = keys.unionAll(spark.range(1).select(null))
    keys = keys.distinct().localCheckpoint()
    view = hidden(f"join_keys_{index}")
    keys.createOrReplaceTempView(view)
    restricted = keys_restricted(
        branch, [(column, key.expression)], view, {column: keys.schema.fields[0].dataType}
    )
    assert isinstance(restricted, exp.Select), "a branch is one SELECT"
    return _now_less_before(spark, restricted, reads, names, registered)


def _decided_otherwise(
    spark: SparkSession,
    parameter: Parameter,
    reads: dict[str, SourceRead],
    registered: set[str],
    name: str,
) -> list[DataFrame]:
    """The keys of the rows (as read now) whose condition decides otherwise with the parameter's
    value now than as last read; none when the value is the same. A row that changed gives its
    key by itself, so the rows as read now are enough."""
    tables = [reads[table.name.lower()] for table in references(parameter.query)]
    if not any(read.changed for read in tables):
        return []
    now = rewrite(parameter.query, lambda _, table: view_or_self(reads, table, "new"))
    then = rewrite(parameter.query, lambda _, name: _as_last_read(spark, reads, name, registered))
    values = {}
    for time, sql in (("now", now), ("then", then)):
        frame = spark.sql(sql)
        values[time] = frame.collect()
        view = hidden(f"parameter_{name}_{time}")
        frame.toDF("value").createOrReplaceTempView(view)
    if values["now"] == values["then"]:
        return []
    conditions = []
    for time in ("now", "then"):
        conjunct = parameter.conjunct.copy()
        held = next(s for s in conjunct.find_all(exp.Subquery) if s.this == parameter.query)
        value = exp.select("value").from_(hidden(f"parameter_{name}_{time}"))
        held.replace(exp.Subquery(this=value))
        conditions.append(conjunct)
    same = exp.NullSafeEQ(this=conditions[0], expression=conditions[1])
    rows = parameter.rows.where(exp.not_(same))
    return [spark.sql(rewrite(rows, lambda _, table: view_or_self(reads, table, "new")))]


def _null_keys_changed(
    spark: SparkSession, key: JoinKey, tables: list[exp.Table], reads: dict[str, SourceRead]
) -> bool:
    """Whether a row the change gains or loses in a NOT IN's table has a NULL key."""
    for table in tables:
        alias, read = table.alias_or_name.lower(), reads[table.name.lower()]
        for kind in ("pos", "neg"):
            scan = exp.to_table(read.view(kind)).as_(alias)
            nulls = exp.select("1").from_(scan).where(key.columns[alias].copy().is_(exp.null()))
            if not spark.sql(nulls.sql(dialect="spark")).isEmpty():
                return True
    return False


def _by_derived_key(
    spark: SparkSession,
    branch: exp.Select,
    derived: exp.Subquery,
    reads: dict[str, SourceRead],
    names: list[str],
    registered: set[str],
    index: int,
) -> list[DataFrame]:
    """A derived table with a key (GROUP BY, DISTINCT, PARTITION BY): its rows of one key value
    come from its source rows of that value, so the change is the branch over the derived
    table's rows of the keys the changed source rows touch, now (+1) less as last read (-1)."""
    inner = derived.this
    keys = key_of(inner) or []
    columns = [key_name(position) for position in range(len(keys))]
    rows = key_rows(inner, keys)
    touched = signed_rows(spark, (rows,), reads, columns).select(*map(col, columns)).distinct()
    touched = touched.localCheckpoint()
    view = hidden(f"derived_keys_{index}")
    touched.createOrReplaceTempView(view)
    types = {field.name: field.dataType for field in touched.schema.fields}
    restricted = branch.copy()
    within = derived_table(restricted)
    assert within is not None, "the copy reads the same derived table"
    within.set("this", keys_restricted(inner, list(zip(columns, keys, strict=True)), view, types))
    return _now_less_before(spark, restricted, reads, names, registered)


def _now_less_before(
    spark: SparkSession,
    query: exp.Select,
    reads: dict[str, SourceRead],
    names: list[str],
    registered: set[str],
) -> list[DataFrame]:
    """The query's rows over the sources now (+1) and as the last refresh read them (-1)."""

    now = spark.sql(rewrite(query, lambda _, name: view_or_self(reads, name, "new")))
    then = spark.sql(rewrite(query, lambda _, name: _as_last_read(spark, reads, name, registered)))
    return [
        now.toDF(*names).withColumn(MULT, F.lit(1)),
        then.toDF(*names).withColumn(MULT, F.lit(-1)),
    ]


def _with_changed(
    spark: SparkSession,
    select: exp.Select,
    alias: str,
    kind: str,
    others: str,
    reads: dict[str, SourceRead],
    registered: set[str],
) -> str:
    """`select` with the table under `alias` read from its rows gained or lost (`kind`), and
    every other table as read now (`new`) or as last read (`old`)."""
    refs = [table.alias_or_name.lower() for table in references(select)]

    def relation(index: int, name: str) -> str:
        read = reads[name]
        if refs[index] == alias:
            return read.view(kind)
        if others == "old" and read.changed:
            return _view_as_last_read(spark, read, registered)
        return read.view("new")

    return rewrite(select, relation)


def row_changes(
    spark: SparkSession,
    branches: tuple[exp.Select, ...],
    reads: dict[str, SourceRead],
    names: list[str],
    clustered_by: tuple[str, ...] = (),
) -> DataFrame:
    """The signed rows (`names` + MULT) the branches' result gains and loses, netted; hash
    partitioned by `clustered_by` when given, so that grouping by those needs no more shuffle."""
    combined = signed_rows(spark, branches, reads, names)
    if clustered_by:
        combined = combined.repartition(*map(col, clustered_by))
    return combined.groupBy(*map(col, names)).agg(F.sum(MULT).alias(MULT)).filter(F.col(MULT) != 0)


def null_safe(left: str, right: str, fields: list[StructField]) -> str:
    """Rows of `left` and `right` equal in `fields`, NULLs equal and maps compared by entries."""
    return (
        " AND ".join(
            same(f"{left}.{quote_name(f.name)}", f"{right}.{quote_name(f.name)}", f.dataType)
            for f in fields
        )
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
        current.alias("t")
        .join(wanted.alias("l"), on=F.expr(null_safe("t", "l", schema.fields)), how="left_semi")
        .groupBy(*map(col, names))
        .agg(F.count(F.lit(1)).alias(hidden("have")))
    )
    kept = (
        lost.alias("l")
        .join(counts.alias("c"), on=F.expr(null_safe("l", "c", schema.fields)), how="left")
        .select(
            *[F.col(f"l.{quote_name(c)}").alias(c) for c in names],
            (F.coalesce(F.col(f"c.{hidden('have')}"), F.lit(0)) + F.col(f"l.{MULT}")).alias(MULT),
        )
    )
    removals = lost.select(*map(col, names)).withColumn(OP, F.lit("D"))
    re_added = _copies(kept.filter(F.col(MULT) > 0), F.col(MULT), names)
    added = _copies(typed.filter(F.col(MULT) > 0), F.col(MULT), names)
    inserts = re_added.unionAll(added).withColumn(OP, F.lit("I"))
    removals.unionAll(inserts).localCheckpoint().createOrReplaceTempView(MERGE_SOURCE)
    columns = ", ".join(map(quote_name, names))
    values = ", ".join(f"s.{quote_name(c)}" for c in names)
    pruned = f"{where.sql('t')} AND " if where is not None else ""
    return (
        f"MERGE INTO {delta_ref(location)} AS t USING {MERGE_SOURCE} AS s "
        f"ON s.{OP} = 'D' AND {pruned}{null_safe('t', 's', schema.fields)} "
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


# Spark's settings for evaluating expressions without generating and compiling code.
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def incremental_conf(spark: SparkSession, compiled: bool = True) -> dict[str, str]:
    """An incremental refresh's plans are small: static plans (no per-stage jobs and re-planning)
    and one shuffle partition per core at most (one wave of tasks, fewer files to rewrite).
    Each took 6-24 % and about 10 % off refreshes after 3-row changes on 1M rows (noisy runs).
    Not `compiled`, its expressions are interpreted (see choosing.compiled)."""
    configured = int(spark.conf.get("spark.sql.shuffle.partitions", None) or 200)
    # Set for local masters only (resources.spark); a cluster's driver has no such key.
    cores = int(spark.conf.get("spark.default.parallelism", None) or configured)
    partitions = min(configured, cores)
    conf = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions)}
    return conf if compiled else {**conf, **INTERPRETED}
