"""Table stream cost vs the size of the change, in one process on one Spark session.

    .venv/bin/python -u bench/streams.py --rows 50000000

A source table of --rows rows (id BIGINT, k INT, v DOUBLE, s STRING), created by our SQL with a
STANDARD stream on it (which turns on row tracking and the change data feed), then filled by
`spark.range` written straight to its Delta location, in id order, --rows-per-file rows a file.
It is kept under --work with a marker, so a rerun skips the build: the rerun restores the source
to the version the build left and recreates the stream and the targets.

1. Stream read cost. For each change size (0.001 %, 0.01 %, 0.1 %, 1 % of the rows: a third
   inserts of new ids, a third updates and a third deletes of id ranges, through our SQL) the
   stream's offset is set to the version before the change, and, each --repeat times (median
   printed): `SELECT * FROM s` as our session binds it, written to Spark's noop sink (binding,
   which pins the range, included); a full scan of the source; a plain change data feed read of
   the same versions (`table_changes_by_path`). Goal: at 0.01 %, stream ≤ 5 % of the full scan
   and ≤ 1.5 x the CDF read.
   1b. The stream's two readers, timed in the same rounds: which one the range took (direct =
   its change files and new files alone, streams/changelog.py); the same stream read Delta's
   way (`CHANGES … netChanges`, the oracle), checked to return the same rows; Delta's raw
   `CHANGES … netChanges` query alone; and the rows Delta's changelog scan emits before it
   drops copy-on-write carry-over pairs (counted), which is why its cost follows the table.
2. Consuming cost. At 0.01 % and 0.1 %: `INSERT INTO sink SELECT * FROM s` through our SQL (it
   claims, commits with a tag, finds the commit, moves the offset) beside a plain Delta append of
   the same rows (the stream's bound query, written by `DataFrameWriter` to another table) and a
   plain Spark SQL `INSERT INTO delta.`…` <that query>`, the offset set back before each repeat
   so every repeat consumes the same range; the order alternates. Goal: bookkeeping
   (ours - plain append) / plain append ≤ 20 %.
Timings are wall-clock on whatever else the machine runs at the same time."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import delta_ref, latest_version, row_count, sql_string
from lake_assets.core.settings import LakeSettings
from lake_assets.kinds import GRAMMAR
from lake_assets.session import LakeSession
from lake_assets.sql.statements import Query
from lake_assets.streams import offsets
from lake_assets.streams.reading import change_query
from lake_assets.tables.entry import TableEntry
from resources.jvm import DELTA_ARTIFACT
from resources.spark import DeltaSparkResource, local_cores

COLUMNS = "id BIGINT, k INT, v DOUBLE, s STRING"
SINK_COLUMNS = (
    "`__change_type` STRING, `__commit_version` BIGINT, `__commit_timestamp` TIMESTAMP, " + COLUMNS
)
READ_FRACTIONS = (0.00001, 0.0001, 0.001, 0.01)
CONSUME_FRACTIONS = (0.0001, 0.001)
GOAL_FRACTION = 0.0001
GOAL_OF_SCAN, GOAL_OF_CDF, GOAL_OVERHEAD = 0.05, 1.5, 0.20
MARKER = "built.json"


def build(lake: LakeSession, rows: int, rows_per_file: int) -> int:
    """The source and its stream, then --rows rows in id order; returns the version written."""
    lake.sql(f"CREATE TABLE src ({COLUMNS}); CREATE TABLE STREAM s ON TABLE src")
    entry = lake.catalog.get(TableEntry, "src")
    spark = lake.spark
    spark.range(rows, numPartitions=8).selectExpr(
        "id",
        "CAST(id % 1000 AS INT) AS k",
        "CAST(id AS DOUBLE) / 7 AS v",
        "concat('row-', CAST(id AS STRING)) AS s",
    ).write.format("delta").mode("append").option("maxRecordsPerFile", rows_per_file).save(
        entry.location
    )
    version = latest_version(spark, entry.location)
    lake.catalog.record_table_state(entry, version, rows)
    return version


def prepare(lake: LakeSession, home: Path, rows: int, rows_per_file: int) -> str:
    """The source as the build left it (built now, or restored), a fresh stream on it and empty
    targets; returns the source's location."""
    marker = home / MARKER
    spark = lake.spark
    if marker.exists():
        built = json.loads(marker.read_text())
        location = lake.catalog.get(TableEntry, "src").location
        if latest_version(spark, location) != built["version"]:
            spark.sql(f"RESTORE TABLE {delta_ref(location)} TO VERSION AS OF {built['version']}")
            version = latest_version(spark, location)
            entry = lake.catalog.get(TableEntry, "src")
            lake.catalog.record_table_state(entry, version, row_count(spark, location, version))
            built["version"] = version
            marker.write_text(json.dumps(built))
        print(f"source: {rows} rows, kept from an earlier run ({built['seconds']:.0f} s to build)")
    else:
        started = time.perf_counter()
        version = build(lake, rows, rows_per_file)
        seconds = time.perf_counter() - started
        marker.write_text(json.dumps({"version": version, "rows": rows, "seconds": seconds}))
        location = lake.catalog.get(TableEntry, "src").location
        print(f"source: {rows} rows, built in {seconds:.1f} s")
    lake.sql(
        "CREATE OR REPLACE TABLE STREAM s ON TABLE src; DROP TABLE IF EXISTS sink; "
        f"CREATE TABLE sink ({SINK_COLUMNS})"
    )
    files = sum(1 for path in Path(location).glob("*.parquet"))
    print(f"source files: {files} parquet files (all versions), at {location}")
    return location


@dataclass
class Changer:
    """Mixed changes on disjoint id ranges: updates from 10 % of the ids up, deletes from 50 %
    up, inserts from the first id past the table's."""

    rows: int
    top: int
    updated: int = 0
    deleted: int = 0

    def __post_init__(self) -> None:
        self.updated, self.deleted = self.rows // 10, self.rows // 2

    def apply(self, lake: LakeSession, fraction: float) -> int:
        """A third inserts, a third updates, a third deletes (3 commits); returns rows changed."""
        third = max(1, int(self.rows * fraction) // 3)
        up, down, top = self.updated, self.deleted, self.top
        lake.sql(
            f"INSERT INTO src SELECT id, CAST(id % 1000 AS INT), -1.0, 'inserted' "
            f"FROM range({top}, {top + third});"
            f"UPDATE src SET v = v + 1, s = concat(s, '+') "
            f"WHERE id BETWEEN {up} AND {up + third - 1};"
            f"DELETE FROM src WHERE id BETWEEN {down} AND {down + third - 1}"
        )
        self.top, self.updated, self.deleted = top + third, up + third, down + third
        return 3 * third


def noop(frame: DataFrame) -> None:
    """Every row and column of `frame` computed and dropped."""
    frame.write.format("noop").mode("overwrite").save()


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def stream_sql(lake: LakeSession) -> str:
    """`SELECT * FROM s` as the session binds it: the stream's range pinned now."""
    (query,) = GRAMMAR.parse_script("SELECT * FROM s")
    assert isinstance(query, Query)
    return lake.bind(query).sql


def raw_net_changes(location: str, first: int, last: int) -> str:
    """Delta's net changes of the range alone: what the stream's query wraps."""
    return (
        f"SELECT * FROM {delta_ref(location)} CHANGES FROM VERSION {first} EXCLUSIVE "
        f"TO VERSION {last} WITH ('deduplicationMode' = 'netChanges', 'computeUpdates' = 'true')"
    )


def delta_way(lake: LakeSession) -> str:
    """The stream's query as Delta's own net-change reader would answer it (the oracle)."""
    pinned = offsets.pin(lake.spark, lake.catalog, "s")
    columns = pinned.source.columns
    return change_query(pinned.entry, pinned.read, columns, pinned.commits, files=None)


def direct(lake: LakeSession) -> bool:
    """Whether the stream's range is read from its change files and new files alone."""
    files = offsets.pin(lake.spark, lake.catalog, "s").files
    return files is not None and files.direct


def fingerprint(frame: DataFrame) -> tuple[int, int]:
    """Row count and an order-free sum of row hashes."""
    row_hash = F.xxhash64(*[F.col(c) for c in frame.columns]).cast("decimal(38,0)")
    return tuple(frame.agg(F.count(F.lit(1)), F.sum(row_hash)).first())


def reads(spark: SparkSession, lake: LakeSession, location: str, first: int, last: int) -> dict:
    """One timing of each read of the range first (exclusive) .. last; the stream's includes
    binding (which pins its range and reads its log), also timed alone."""
    feed = f"SELECT * FROM table_changes_by_path({sql_string(location)}, {first + 1}, {last})"
    started = time.perf_counter()
    bound = stream_sql(lake)
    bind = time.perf_counter() - started
    noop(spark.sql(bound))
    timings = {
        "stream": time.perf_counter() - started,
        "bind": bind,
        "raw": seconds(lambda: noop(spark.sql(raw_net_changes(location, first, last)))),
        "scan": seconds(lambda: noop(spark.read.format("delta").load(location))),
        "cdf": seconds(lambda: noop(spark.sql(feed))),
        "delta": seconds(lambda: noop(spark.sql(delta_way(lake)))),
    }
    return timings


def sizes(spark: SparkSession, lake: LakeSession, location: str, first: int, last: int) -> dict:
    """Untimed: the stream's rows, the rows Delta's changelog scan emits before it drops the
    copy-on-write carry-over pairs, the reader the range takes, and whether Delta's way returns
    the same rows."""
    stream = spark.sql(stream_sql(lake))
    emitted = spark.sql(
        f"SELECT * FROM {delta_ref(location)} CHANGES FROM VERSION {first} EXCLUSIVE "
        f"TO VERSION {last} WITH ('deduplicationMode' = 'none')"
    )
    same = fingerprint(stream) == fingerprint(spark.sql(delta_way(lake)))
    reader = "direct" if direct(lake) else "Delta"
    return {"stream": stream.count(), "emitted": emitted.count(), "same": same, "reader": reader}


def read_cost(lake: LakeSession, location: str, changer: Changer, repeat: int) -> None:
    """Section 1: the table of read timings per change size, then the diagnosis."""
    spark = lake.spark
    results = []
    for fraction in READ_FRACTIONS:
        lake.sql("ALTER STREAM s SET OFFSET LATEST")
        first = latest_version(spark, location)
        changed = changer.apply(lake, fraction)
        last = latest_version(spark, location)
        counts = sizes(spark, lake, location, first, last)
        runs = [reads(spark, lake, location, first, last) for _ in range(repeat)]
        t = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        results.append((fraction, changed, counts, t))

    print(f"\n1. stream read cost (median of {repeat} runs each; s = seconds)")
    print(f"{'change':>8} {'changed rows':>13} {'stream rows':>12} {'stream s':>9} "
          f"{'of which bind s':>16} {'full scan s':>12} {'CDF read s':>11} "
          f"{'stream/scan':>12} {'stream/CDF':>11}")  # fmt: skip
    for fraction, changed, counts, t in results:
        print(f"{fraction:>8.3%} {changed:>13,} {counts['stream']:>12,} {t['stream']:>9.2f} "
              f"{t['bind']:>16.2f} {t['scan']:>12.2f} {t['cdf']:>11.2f} "
              f"{t['stream'] / t['scan']:>12.1%} {t['stream'] / t['cdf']:>10.2f}x")  # fmt: skip
    goal = next(t for fraction, _, _, t in results if fraction == GOAL_FRACTION)
    print(f"goal at {GOAL_FRACTION:.2%}: stream/scan = {goal['stream'] / goal['scan']:.1%} "
          f"(goal <= {GOAL_OF_SCAN:.0%}), stream/CDF = {goal['stream'] / goal['cdf']:.2f}x "
          f"(goal <= {GOAL_OF_CDF}x)")  # fmt: skip

    print(
        "\n1b. the stream's readers: the one its range took, the same read Delta's way "
        "(CHANGES … netChanges, the oracle: same rows?), Delta's raw query alone, and the rows "
        "Delta's changelog scan emits (whole rewritten files, before dropping carry-over pairs)"
    )
    print(f"{'change':>8} {'reader':>7} {'Delta way s':>12} {'Delta/scan':>11} "
          f"{'stream/Delta':>13} {'same rows':>10} {'raw netChanges s':>17} "
          f"{'changelog rows':>15}")  # fmt: skip
    for fraction, _, counts, t in results:
        print(f"{fraction:>8.3%} {counts['reader']:>7} {t['delta']:>12.2f} "
              f"{t['delta'] / t['scan']:>11.1%} {t['stream'] / t['delta']:>13.1%} "
              f"{counts['same']!s:>10} {t['raw']:>17.2f} {counts['emitted']:>15,}")  # fmt: skip


def consume_once(lake: LakeSession, first: int, plain: Path, consume_first: bool) -> dict:
    """The offset set back to `first`, then the consuming INSERT, the plain append of the same
    rows and a plain Spark SQL INSERT of them, in turns that rotate with `consume_first`."""
    lake.sql(f"ALTER STREAM s SET OFFSET (VERSION => {first})")
    query = stream_sql(lake)
    spark = lake.spark

    def plain_append() -> None:
        spark.sql(query).write.format("delta").mode("append").save(str(plain / "append"))

    def sql_insert() -> None:
        spark.sql(f"INSERT INTO {delta_ref(str(plain / 'insert'))} {query}").collect()

    steps = {
        "ours": lambda: lake.sql("INSERT INTO sink SELECT * FROM s"),
        "plain": plain_append,
        "sql": sql_insert,
    }
    order = ["ours", "plain", "sql"] if consume_first else ["plain", "sql", "ours"]
    return {name: seconds(steps[name]) for name in order}


def consume_cost(lake: LakeSession, home: Path, location: str, changer: Changer, repeat: int):
    """Section 2: consuming INSERT vs a plain append of the same rows."""
    spark = lake.spark
    plain = home / "plain"
    shutil.rmtree(plain, ignore_errors=True)
    spark.sql(f"CREATE TABLE {delta_ref(str(plain / 'insert'))} ({SINK_COLUMNS}) USING delta")
    print(f"\n2. consuming cost (median of {repeat} runs each)")
    print(f"{'change':>8} {'rows written':>13} {'INSERT … FROM s s':>18} {'plain append s':>15} "
          f"{'overhead':>9} {'plain SQL INSERT s':>19} {'offset moved':>13}")  # fmt: skip
    for fraction in CONSUME_FRACTIONS:
        lake.sql("ALTER STREAM s SET OFFSET LATEST")
        first = latest_version(spark, location)
        changer.apply(lake, fraction)
        last = latest_version(spark, location)
        written = spark.sql(stream_sql(lake)).count()
        runs = [consume_once(lake, first, plain, number % 2 == 0) for number in range(repeat)]
        t = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        (described,) = lake.sql("DESC STREAM s")
        offset = dict(described.rows)["offset_version"]
        print(f"{fraction:>8.3%} {written:>13,} {t['ours']:>18.2f} {t['plain']:>15.2f} "
              f"{(t['ours'] - t['plain']) / t['plain']:>9.1%} {t['sql']:>19.2f} "
              f"{offset == last!s:>13}")  # fmt: skip
    print(f"goal: overhead <= {GOAL_OVERHEAD:.0%}")


def warm_up(lake: LakeSession, location: str, changer: Changer) -> None:
    """Untimed: a 3-row change read every way once, so code loading favours no column."""
    spark = lake.spark
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    first = latest_version(spark, location)
    changer.apply(lake, 3 / changer.rows)
    reads(spark, lake, location, first, latest_version(spark, location))


def header(spark: SparkSession, settings: LakeSettings, args: argparse.Namespace) -> None:
    conf = spark.sparkContext.getConf()
    print("command:", shlex.join([sys.executable, *sys.argv]))
    print(f"Spark {spark.version}, Delta {DELTA_ARTIFACT.rsplit(':', 1)[1]}, "
          f"master {settings.spark_master} ({local_cores(settings.spark_master)} task slots, "
          f"{os.cpu_count()} cores), driver memory {conf.get('spark.driver.memory')}, "
          f"shuffle partitions {conf.get('spark.sql.shuffle.partitions')}")  # fmt: skip
    print(f"rows {args.rows:,}, rows per file {args.rows_per_file:,}, repeat {args.repeat}, "
          f"LAKE_SPARK_CONF={os.environ.get('LAKE_SPARK_CONF', '')!r}")  # fmt: skip
    print("timings are wall-clock on a shared machine: other processes' load shows in them")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--rows-per-file", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "lake-bench-streams"
    )
    args = parser.parse_args()
    home = args.work / f"rows-{args.rows}-per-file-{args.rows_per_file}"
    if not (home / MARKER).exists():
        shutil.rmtree(home, ignore_errors=True)  # an unfinished build
    home.mkdir(parents=True, exist_ok=True)
    env = LakeSettings.from_env()
    settings = LakeSettings(
        lake_home=home / "lake",
        spark_master=env.spark_master,
        jars_dir=env.jars_dir,
        spark_conf=env.spark_conf,
    )
    spark = DeltaSparkResource.from_settings(
        settings, console_log=str(home / "console.log")
    ).spark_session
    header(spark, settings, args)
    lake = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
    location = prepare(lake, home, args.rows, args.rows_per_file)
    changer = Changer(args.rows, top=args.rows)
    warm_up(lake, location, changer)
    read_cost(lake, location, changer, args.repeat)
    consume_cost(lake, home, location, changer, args.repeat)


if __name__ == "__main__":
    main()
