"""A refresh's write: the table's change applied in one fenced commit that carries the
refresh's record (incrementally, by the plan's shape), or the query's whole result."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from lake_assets.core import failpoints
from lake_assets.core.commits import Fence, committing, fenced_write
from lake_assets.core.delta import MATERIALIZE_SOURCE_CONF, Commit
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables import pruning
from lake_assets.dynamic_tables.aggregate import aggregate_merge
from lake_assets.dynamic_tables.delta_rule import row_changes as result_changes
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.incremental import (
    MULT,
    SourceRead,
    col,
    full_result,
    gained_rows,
    projection_merge,
    register_sources,
    table_at,
)
from lake_assets.dynamic_tables.keyed import keyed_changes
from lake_assets.dynamic_tables.plan import AGGREGATE, KEYED, Plan
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.sql.types import holds_map

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
REFRESH_BEFORE_COMMIT = "refresh-before-commit"


class Phases:
    """A refresh's time by phase: `plan` (its last record, the plan, the sources' versions),
    `stages` (bringing the parts of its query kept in hidden tables up to date), `changes`
    (reading the change feeds and computing the table's change), `commit` (writing it: a MERGE
    reads the change and the files it rewrites) and `record` (the history and catalog)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._mark = time.monotonic()

    def end(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + now - self._mark, 3)
        self._mark = now


@dataclass(frozen=True)
class Write:
    """One refresh's write: what it reads, its fence (with the table version it starts from)
    and its record."""

    spark: SparkSession
    entry: DynamicTableEntry
    plan: Plan
    query: exp.Expr
    reads: list[SourceRead]
    fence: Fence
    metadata: dict[str, Any]
    phases: Phases
    # The table's rows at `fence.version` (what replacing them all removes).
    rows_before: int = 0

    @property
    def dt_version(self) -> int:
        return self.fence.version

    def committed(self, write: Callable[[], object]) -> Commit:
        """Run `write` as the refresh's one commit (carrying its record, fenced against a
        concurrent refresh) and return that commit."""
        conf = {MATERIALIZE_SOURCE_CONF: "none"}

        def fenced() -> None:
            with committing(self.spark, self.metadata, self.fence, conf):
                failpoints.reached(REFRESH_BEFORE_COMMIT)
                write()

        self.phases.end("changes")

        location = self.entry.location
        commit = fenced_write(self.spark, location, self.metadata, self.fence, fenced)
        self.phases.end("commit")
        if commit is None:
            raise LakeError(
                f"another refresh of dynamic table {self.entry.name} committed at the same "
                "moment; this one wrote nothing",
                "refresh it again if needed: it starts from what the other refresh committed",
            )
        return commit


def write_incremental(job: Write) -> Commit:
    spark, entry, plan = job.spark, job.entry, job.plan
    job.metadata["mode"] = RefreshMode.INCREMENTAL
    register_sources(spark, job.reads, changes=True)
    by_name = {read.name: read for read in job.reads}
    schema = table_at(spark, entry.location, job.dt_version).schema
    visible = [c.name for c in entry.columns]
    if plan.shape == AGGREGATE:
        merge = aggregate_merge(
            spark, plan, job.query, by_name, entry.location, job.dt_version, schema, visible
        )
        return job.committed(lambda: spark.sql(merge).collect())
    # Computed once, here: the emptiness check, the pruning ranges and the MERGE source read it.
    if plan.shape == KEYED:
        keyed = keyed_changes(
            spark, plan, job.query, by_name, entry.location, job.dt_version, schema
        )
        changes = keyed.localCheckpoint()
    else:
        changes = result_changes(spark, plan.branches, by_name, visible).localCheckpoint()
    return write_changes(job, changes, schema)


def write_changes(job: Write, changes: DataFrame, schema: StructType) -> Commit:
    """Rows gained and lost (`changes`, netted, with MULT) in the refresh's one commit: a MERGE,
    or an append when rows are only gained."""
    spark, location = job.spark, job.entry.location
    update = projection_merge(spark, location, job.dt_version, changes, schema)
    if update is not None:
        return job.committed(lambda: spark.sql(update).collect())
    gained = gained_rows(changes, schema)
    return job.committed(lambda: gained.write.format("delta").mode("append").save(location))


def write_full(job: Write, only_differences: bool = True) -> Commit:
    """The query's result, with the state columns the plan keeps, becomes the table's rows:
    `only_differences` written (see write_difference), or replacing them all (as when an earlier
    version laid out other state columns)."""
    register_sources(job.spark, job.reads, changes=False)
    names = [c.name for c in job.entry.columns] + list(job.plan.hidden)
    by_name = {read.name: read for read in job.reads}
    result = full_result(job.spark, job.plan, job.query, by_name, names)
    return write_difference(job, result) if only_differences else write_rows(job, result)


def write_difference(job: Write, rows: DataFrame) -> Commit:
    """`rows` become the table's rows, but only those that differ from its rows now are written
    (added or removed), so that a reader of its changes sees the net difference alone. They
    are written whole when the table is empty, and replace its rows when its state columns were
    laid out for another plan or a column holds a MAP (which Spark cannot group)."""
    held = table_at(job.spark, job.entry.location, job.dt_version)
    relaid = job.plan.hidden != job.entry.hidden
    maps = any(holds_map(field.dataType) for field in held.schema.fields)
    if relaid or maps or job.rows_before == 0:
        return write_rows(job, rows)
    names = held.columns
    changes = (
        rows.toDF(*names)
        .withColumn(MULT, F.lit(1))
        .unionAll(held.withColumn(MULT, F.lit(-1)))
        .groupBy(*map(col, names))
        .agg(F.sum(MULT).alias(MULT))
        .filter(F.col(MULT) != 0)
        .localCheckpoint()
    )
    return write_changes(job, changes, held.schema)


def write_rows(job: Write, frame: DataFrame) -> Commit:
    """`frame` replaces the table's rows in the refresh's one commit."""
    job.metadata["replaced_rows"] = job.rows_before
    writer = frame.write.format("delta").mode("overwrite")
    writer = writer.option("maxRecordsPerFile", pruning.ROWS_PER_FILE)
    if job.plan.hidden != job.entry.hidden:
        writer = writer.option("overwriteSchema", "true")
    return job.committed(lambda: writer.save(job.entry.location))
