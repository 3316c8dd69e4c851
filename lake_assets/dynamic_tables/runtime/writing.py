"""A refresh's write: the table's change applied in one fenced commit that carries the
refresh's record, or the query's whole result (its difference from the table's rows)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from lake_assets.core import failpoints
from lake_assets.core.commits import Fence, committing, fenced_write
from lake_assets.core.delta import MATERIALIZE_SOURCE_CONF, Commit, delta_ref, quote_name
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.expected import judge_refresh
from lake_assets.dynamic_tables.refreshes import RefreshCommit, RefreshRaced
from lake_assets.dynamic_tables.runtime import pruning
from lake_assets.dynamic_tables.runtime.netting import MULT, col, copies, difference
from lake_assets.dynamic_tables.runtime.sources import (
    Changes,
    SourceRead,
    full_result,
    null_safe,
    register_sources,
    table_at,
)
from lake_assets.sql.types import holds_map

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
REFRESH_BEFORE_COMMIT = "refresh-before-commit"
# A MERGE source's column saying what a row does: "D" deletes, "I" inserts, "U" upserts.
OP = hidden("op")
# Lost rows up to this many values are broadcast to the read counting their copies, instead of
# shuffling the (pruned) table: about 20 MB. Incremental plans are static (no adaptive execution).
_BROADCAST_CELLS = 2_000_000


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
    """One refresh's write: the table, the query with its state columns (`stateful`, whose
    hidden columns are `hidden`), what it reads, its fence (with the table version it starts
    from) and its record."""

    spark: SparkSession
    entry: DynamicTableEntry
    stateful: exp.Expr
    hidden: tuple[str, ...]
    reads: list[SourceRead]
    fence: Fence
    metadata: RefreshCommit
    phases: Phases
    # The table's rows at `fence.version` (what replacing them all removes).
    rows_before: int = 0
    # Its query as written, runnable, when DROP ROW expectations filter it: its whole result is
    # judged by them at each refresh (see expected).
    written: exp.Expr | None = None

    @property
    def dt_version(self) -> int:
        return self.fence.version

    @property
    def by_name(self) -> dict[str, SourceRead]:
        return {read.name: read for read in self.reads}

    def changes(self) -> Changes:
        """What the operators' rules read, for this write."""
        return Changes(self.spark, self.by_name)

    @property
    def visible(self) -> list[str]:
        return [c.name for c in self.entry.columns]

    def held(self) -> DataFrame:
        """The table's rows at the version the refresh starts from."""
        return table_at(self.spark, self.entry.location, self.dt_version)

    def judge(self, added: DataFrame) -> None:
        """The table's expectations judge this commit (see expected.judge_refresh): `added`, the
        rows it adds, and its query's whole result when DROP ROW ones filter it; the counts ride
        in its record."""
        if not self.entry.expectations:
            return
        result = None
        if self.written is not None:
            register_sources(self.spark, self.reads, changes=False)
            result = full_result(self.spark, self.written, self.by_name, self.visible)
        added = added.select(*map(col, self.visible))
        self.metadata.expectations = judge_refresh(self.entry, added, result, self.metadata.tag)

    def merge(self, source: DataFrame, on: str, clauses: str) -> Commit:
        """The refresh's one commit as a MERGE of `source` (as `s`) into the table (as `t`):
        the one place a MERGE is built; its source is the caller's value, under a view of its
        own for the statement's time."""
        view = hidden(f"merge_{uuid.uuid4().hex[:12]}")
        source.createOrReplaceTempView(view)
        table = delta_ref(self.entry.location)
        statement = f"MERGE INTO {table} AS t USING {view} AS s ON {on} {clauses}"
        try:
            return self.committed(lambda: self.spark.sql(statement).collect())
        finally:
            self.spark.catalog.dropTempView(view)

    def committed(self, write: Callable[[], object]) -> Commit:
        """Run `write` as the refresh's one commit (carrying its record, fenced against a
        concurrent refresh) and return that commit."""
        conf = {MATERIALIZE_SOURCE_CONF: "none"}

        def fenced() -> None:
            with committing(self.spark, record, self.fence, conf):
                failpoints.reached(REFRESH_BEFORE_COMMIT)
                write()

        self.phases.end("changes")

        location = self.entry.location
        record = self.metadata.to_json()
        commit = fenced_write(self.spark, location, record, self.fence, fenced)
        self.phases.end("commit")
        if commit is None:
            raise RefreshRaced(
                f"another refresh of dynamic table {self.entry.name} committed at the same "
                "moment; this one wrote nothing",
                "refresh it again if needed: it starts from what the other refresh committed",
            )
        return commit


def write_changes(job: Write, changes: DataFrame, schema: StructType) -> Commit:
    """Rows gained and lost (`changes`, netted, with MULT) in the refresh's one commit: a MERGE,
    or an append when rows are only gained."""
    job.judge(_gained_rows(changes, schema))
    merged = _rows_merge(job.held(), changes, schema)
    if merged is None:
        gained = _gained_rows(changes, schema)
        location = job.entry.location
        return job.committed(lambda: gained.write.format("delta").mode("append").save(location))
    source, on = merged
    names = ", ".join(quote_name(field.name) for field in schema.fields)
    values = ", ".join(f"s.{quote_name(field.name)}" for field in schema.fields)
    inserted = f"WHEN NOT MATCHED AND s.{OP} = 'I' THEN INSERT ({names}) VALUES ({values})"
    return job.merge(source, on, f"WHEN MATCHED THEN DELETE {inserted}")


def _rows_merge(
    held: DataFrame, changes: DataFrame, schema: StructType
) -> tuple[DataFrame, str] | None:
    """The MERGE source and condition that delete the rows lost and insert the rows gained
    (a lost row's other copies deleted with it are inserted again), or None when rows are only
    gained (then appending `_gained_rows` is the cheaper write)."""
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
    current = held
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
    re_added = copies(kept.filter(F.col(MULT) > 0), F.col(MULT), names)
    added = copies(typed.filter(F.col(MULT) > 0), F.col(MULT), names)
    inserts = re_added.unionAll(added).withColumn(OP, F.lit("I"))
    pruned = f"{where.sql('t')} AND " if where is not None else ""
    on = f"s.{OP} = 'D' AND {pruned}{null_safe('t', 's', schema.fields)}"
    return removals.unionAll(inserts).localCheckpoint(), on


def _gained_rows(changes: DataFrame, schema: StructType) -> DataFrame:
    """The rows gained (what is appended when a projection only gains rows)."""
    names = [field.name for field in schema.fields]
    typed = changes.select(
        *[col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields], F.col(MULT)
    )
    return copies(typed.filter(F.col(MULT) > 0), F.col(MULT), names)


def write_full(job: Write, only_differences: bool = True) -> Commit:
    """The query's result, with the state columns the plan keeps, becomes the table's rows:
    `only_differences` written (see write_difference), or replacing them all (as when an earlier
    version laid out other state columns)."""
    register_sources(job.spark, job.reads, changes=False)
    names = job.visible + list(job.hidden)
    result = full_result(job.spark, job.stateful, job.by_name, names)
    return write_difference(job, result) if only_differences else write_rows(job, result)


def write_difference(job: Write, rows: DataFrame) -> Commit:
    """`rows` become the table's rows, but only those that differ from its rows now are written
    (added or removed), so that a reader of its changes sees the net difference alone. They
    are written whole when the table is empty, and replace its rows when its state columns were
    laid out for another plan or a column holds a MAP (which Spark cannot group)."""
    held = job.held()
    relaid = job.hidden != job.entry.hidden
    maps = any(holds_map(field.dataType) for field in held.schema.fields)
    if relaid or maps or job.rows_before == 0:
        return write_rows(job, rows)
    changes = difference(rows, held, held.columns).localCheckpoint()
    return write_changes(job, changes, held.schema)


def write_rows(job: Write, frame: DataFrame) -> Commit:
    """`frame` replaces the table's rows in the refresh's one commit."""
    job.judge(frame)
    job.metadata.replaced_rows = job.rows_before
    writer = frame.write.format("delta").mode("overwrite")
    writer = writer.option("maxRecordsPerFile", pruning.ROWS_PER_FILE)
    if job.hidden != job.entry.hidden:
        writer = writer.option("overwriteSchema", "true")
    return job.committed(lambda: writer.save(job.entry.location))
