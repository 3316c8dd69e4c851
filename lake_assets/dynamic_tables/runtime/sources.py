"""What an incremental refresh reads: each source as read now and as last read, its change data
feed as a signed bag of rows (+1 inserted, -1 deleted, netted per row; the operators' rules
read them, see operators), the schema a query has over them, and the Spark settings of small
incremental plans."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField
from sqlglot import exp

from lake_assets.core.delta import INTERPRETED, commits_from, quote_name
from lake_assets.core.delta import row_changes as delta_row_changes
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.runtime.netting import MULT, col, copies, free_name, netted
from lake_assets.dynamic_tables.runtime.queries import rewrite
from lake_assets.sql.types import same

_CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


@dataclass(frozen=True)
class SourceRead:
    """One source of a refresh: the version read now and the one the last refresh read."""

    name: str
    location: str
    columns: tuple[str, ...] | None
    version: int
    previous: int | None
    index: int
    # Its rows when last counted (the catalog's figure), None when not known.
    rows: int | None = None

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


def _at(spark: SparkSession, read: SourceRead, version: int) -> DataFrame:
    frame = spark.read.format("delta").option("versionAsOf", version).load(read.location)
    return frame.select(*map(col, read.columns)) if read.columns else frame


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
    net = netted(feed.select(*map(col, columns), sign.alias(multiplicity)), columns, multiplicity)
    return net, multiplicity


def register_sources(spark: SparkSession, reads: list[SourceRead], changes: bool) -> None:
    """Views of each source now, and with `changes` also its rows gained and lost since the
    last refresh (the source as last read is registered only when a join needs it)."""
    for read in reads:
        _at(spark, read, read.version).createOrReplaceTempView(read.view("new"))
        if changes and read.changed:
            net, multiplicity = net_changes(spark, read)
            columns = [c for c in net.columns if c != multiplicity]
            count = col(multiplicity)
            gained = copies(net.filter(count > 0), count, columns)
            lost = copies(net.filter(count < 0), -count, columns)
            gained.createOrReplaceTempView(read.view("pos"))
            lost.createOrReplaceTempView(read.view("neg"))


def full_result(
    spark: SparkSession, query: exp.Expr, reads: dict[str, SourceRead], names: list[str]
) -> DataFrame:
    """The query over the sources as read now, named `names`."""
    sql = rewrite(query, lambda _, name: view_or_self(reads, name, "new"))
    return spark.sql(sql).toDF(*names)


def schema_of(spark: SparkSession, query: exp.Expr, reads: list[SourceRead]) -> list[StructField]:
    """The columns `query` returns over the sources as read now (registered by the caller: see
    register_sources), learned from Spark's analysis of it (no job runs): the one way a dynamic
    table's or a hidden table's columns are known."""
    by_name = {read.name: read for read in reads}
    return spark.sql(
        rewrite(query, lambda _, name: view_or_self(by_name, name, "new"))
    ).schema.fields


def view_or_self(reads: dict[str, SourceRead], name: str, kind: str) -> str:
    return reads[name].view(kind) if name in reads else name


@dataclass(frozen=True)
class Changes:
    """What an incremental refresh's operators read, passed to each: the Spark session and each
    source as read now, as last read (registered on first use: only joins read it) and its rows
    gained and lost (see register_sources)."""

    spark: SparkSession
    reads: dict[str, SourceRead]
    registered: set[str] = field(default_factory=set)
    settled: set[str] = field(default_factory=set)

    def now(self, name: str) -> str:
        """The relation to read for `name` as read now."""
        return view_or_self(self.reads, name, "new")

    def before(self, name: str) -> str:
        """The relation to read for `name` as the last refresh read it."""
        read = self.reads.get(name)
        return self.last_read(read) if read is not None and read.changed else self.now(name)

    def delta(self, read: SourceRead) -> DataFrame:
        """The source's rows gained and lost, its change data feed read once for the rest of
        the refresh (its `pos` and `neg` views then read that): for rules that read them more
        than once, as a restricted join does."""
        if read.name not in self.settled:
            gained = self.spark.table(read.view("pos"))
            side = free_name(hidden("gained"), gained.columns)
            both = gained.withColumn(side, F.lit(True)).unionAll(
                self.spark.table(read.view("neg")).withColumn(side, F.lit(False))
            )
            both = both.localCheckpoint()
            both.filter(F.col(side)).drop(side).createOrReplaceTempView(read.view("pos"))
            both.filter(~F.col(side)).drop(side).createOrReplaceTempView(read.view("neg"))
            self.settled.add(read.name)
        return self.spark.table(read.view("pos")).unionAll(self.spark.table(read.view("neg")))

    def last_read(self, read: SourceRead) -> str:
        """The source as the last refresh read it."""
        if read.name not in self.registered:
            old = _at(self.spark, read, int(read.previous or 0))
            old.createOrReplaceTempView(read.view("old"))
            self.registered.add(read.name)
        return read.view("old")


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
