"""Keyed queries (GROUP BY with any aggregate or HAVING, DISTINCT, windows with a shared
PARTITION BY, QUALIFY; UNION, INTERSECT and EXCEPT, keyed by their rows) refresh by recomputing
the keys a change touches: the source rows the change gains and loses give the keys (the delta
rule over the FROM's joins); the query is run on the sources restricted to those keys; the
table's rows of those keys are compared with it, and only rows that differ are written, so
readers of the table see the net difference alone."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from lake_assets.core import names
from lake_assets.dynamic_tables.delta_rule import signed_rows
from lake_assets.dynamic_tables.incremental import (
    MULT,
    SourceRead,
    col,
    null_safe,
    table_at,
    view_or_self,
)
from lake_assets.dynamic_tables.plan import Plan, key_name
from lake_assets.dynamic_tables.queries import (
    key_rows,
    keys_restricted,
    rewrite,
    rows_restricted,
    with_hidden,
)

TOUCHED_KEYS = names.hidden("touched_keys")


def keyed_changes(
    spark: SparkSession,
    plan: Plan,
    query: exp.Expr,
    reads: dict[str, SourceRead],
    location: str,
    version: int,
    schema: StructType,
) -> DataFrame:
    """The table's net change (all its columns + MULT): the touched keys' rows recomputed (+1)
    against the table's rows of those keys (-1), netted. A set operation's keys are its rows:
    those its branches gain or lose."""
    everything = [field.name for field in schema.fields]
    columns, held_by, branches = _keys(plan, everything)
    touched = signed_rows(spark, branches, reads, columns).select(*columns).distinct()
    touched = touched.localCheckpoint()
    touched.createOrReplaceTempView(TOUCHED_KEYS)
    types = {field.name: field.dataType for field in touched.schema.fields}
    restricted = (
        keys_restricted(
            with_hidden(plan, query),
            [(key_name(i), key) for i, key in plan.keys],
            TOUCHED_KEYS,
            types,
        )
        if plan.keys
        else rows_restricted(query, columns, TOUCHED_KEYS, types)
    )
    sql = rewrite(restricted, lambda _, table: view_or_self(reads, table, "new"))
    recomputed = spark.sql(sql).toDF(*everything).withColumn(MULT, F.lit(1))
    key_fields = [field for field in schema.fields if field.name in held_by]
    held = (
        table_at(spark, location, version)
        .alias("t")
        .join(
            F.broadcast(touched.toDF(*held_by)).alias("k"),
            on=F.expr(null_safe("t", "k", key_fields)),
            how="left_semi",
        )
        .withColumn(MULT, F.lit(-1))
    )
    return (
        recomputed.unionAll(held)
        .groupBy(*map(col, everything))
        .agg(F.sum(MULT).alias(MULT))
        .filter(F.col(MULT) != 0)
    )


def _keys(plan: Plan, everything: list[str]) -> tuple[list[str], list[str], tuple[exp.Select, ...]]:
    """The touched keys' columns, the table's columns they match, and the queries of the rows
    that give them: a set operation's are its rows, under hidden names (its branches' own
    columns would be captured by the keys' view)."""
    if not plan.keys:
        return [key_name(index) for index in range(len(everything))], everything, plan.branches
    columns = [key_name(index) for index, _ in plan.keys]
    return columns, columns, (key_rows(plan.branches[0], [key for _, key in plan.keys]),)
