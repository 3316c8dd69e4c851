"""A changelog export of one day's changes vs plain Spark reading the same change data feed to
Parquet, in one process; and a resumed export with nothing new.

    .venv/bin/python bench/changelog_export.py [--rows 20000000] [--percent 1] [--rounds 5]

Builds a keyed, change-tracked table of --rows rows (files ordered by key, as a table loaded in
key order is) through our SQL session, then a "day" of --commits commits that together touch
--percent % of its rows: UPDATEs of contiguous key ranges, with a DELETE and an INSERT among
them. The day is the range from just before its first commit to just after its last. Each
round times, in alternating order: EXPORT CHANGELOG of that range to a volume (Parquet, one
file) and to a table, and plain Spark: `table_changes_by_path` over the same versions written
to Parquet (the goal's baseline) and, for reference, appended to a new Delta table. With the
defaults the day has 256,000 records, few enough for the exports to write them from Arrow in
this process; --percent 5 (1.28M records) measures the exports through Spark. Round 0
warms the JVM's compiler and is not counted. Prints the best of the rounds, the ratios
plain/export (goal >= 0.7), and the seconds of an EXPORT CHANGELOG of the same range again,
which has nothing new (goal <= 2 s)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import Commit, history
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from resources.spark import DeltaSparkResource

GOAL_RATIO, GOAL_RESUME_SECONDS = 0.7, 2.0


def build(lake: LakeSession, rows: int, percent: float, commits: int) -> tuple[int, int]:
    """The table and its day of changes; returns the day's range in epoch milliseconds."""
    lake.sql("CREATE TABLE big (k BIGINT, name STRING, qty INT, price DOUBLE)")
    lake.sql("ALTER TABLE big SET PRIMARY KEY (k)")
    files = max(2, rows // 200_000)
    lake.sql(
        f"INSERT INTO big SELECT /*+ REPARTITION_BY_RANGE({files}, id) */ id, "
        f"concat('item-', id), CAST(id % 1000 AS INT), id * 0.25 FROM range({rows})"
    )
    lake.sql("ALTER TABLE big SET PROPERTIES ('change_tracking' = 'true')")
    time.sleep(0.01)
    start = int(time.time() * 1000)
    step = int(rows * percent / 100 / commits)
    for number in range(commits):
        low = number * rows // commits
        if number == commits // 2:
            lake.sql(f"DELETE FROM big WHERE k >= {low} AND k < {low + step}")
        elif number == commits - 1:
            lake.sql(
                f"INSERT INTO big SELECT id + {rows}, concat('new-', id), 1, 1.0 FROM range({step})"
            )
        else:
            lake.sql(
                f"UPDATE big SET qty = qty + 1, name = IF(k % 10 = 0, NULL, name) "
                f"WHERE k >= {low} AND k < {low + step}"
            )
    end = int(time.time() * 1000) + 1
    return start, end


def plain(
    spark: SparkSession, location: str, first: int, last: int, path: Path, file_format: str
) -> float:
    started = time.perf_counter()
    spark.sql(f"SELECT * FROM table_changes_by_path('{location}', {first}, {last})").write.format(
        file_format
    ).save(str(path))
    return time.perf_counter() - started


def exported(lake: LakeSession, export: str, start: int, end: int) -> tuple[float, str]:
    started = time.perf_counter()
    (result,) = lake.sql(
        f"EXPORT CHANGELOG {export} (START_TIMESTAMP_MILLIS => {start}, "
        f"END_TIMESTAMP_MILLIS => {end})"
    )
    took = time.perf_counter() - started
    return took, str(result.rows[0] if result.rows else result.message)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--percent", type=float, default=1.0)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-export-bench-"))
    spark: SparkSession | None = None
    try:
        settings = LakeSettings(
            lake_home=root / "lake",
            jars_dir=LakeSettings.from_env().jars_dir,
            spark_master="local[*]",
        )
        spark = DeltaSparkResource.from_settings(
            settings, console_log=str(root / "console.log")
        ).spark_session
        print(f"Spark {spark.version}, master {spark.sparkContext.master}, working in {root}")
        lake = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
        return measure(lake, spark, root, args)
    except KeyboardInterrupt:
        return 130
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def measure(lake: LakeSession, spark: SparkSession, root: Path, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    start, end = build(lake, args.rows, args.percent, args.commits)
    location = lake.catalog.get(TableEntry, "big").location
    versions = [c.version for c in history(None, location) if start <= _millis(c) < end]
    first, last = min(versions), max(versions)
    print(
        f"{args.rows:,} rows; a day of {len(versions)} commits (versions {first}-{last}) "
        f"touching {args.percent} % of them; built in {time.perf_counter() - started:.0f} s"
    )
    (root / "volume").mkdir()
    lake.sql("CREATE STORAGE CONNECTION local_files TYPE LOCAL")
    lake.sql(
        f"CREATE EXTERNAL VOLUME out LOCATION 'file://{root / 'volume'}/' "
        "USING CONNECTION local_files DIRECTORY = (ENABLE = FALSE)"
    )
    times: dict[str, list[float]] = {"volume": [], "table": [], "plain": [], "plain_delta": []}
    for number in range(args.rounds + 1):
        ways = {
            "volume": lambda n=number: _fresh_export(
                lake, f"to_volume_{n}", "VOLUME out", start, end
            ),
            "table": lambda n=number: _fresh_export(
                lake, f"to_table_{n}", f"TABLE r_{n}", start, end
            ),
            "plain": lambda n=number: plain(
                spark, location, first, last, root / f"plain_{n}", "parquet"
            ),
            "plain_delta": lambda n=number: plain(
                spark, location, first, last, root / f"plain_delta_{n}", "delta"
            ),
        }
        order = list(ways) if number % 2 else list(reversed(ways))
        for way in order:
            times[way].append(ways[way]())
        print(
            f"round {number}{' (warm-up)' if number == 0 else ''} ({', '.join(order)}): "
            + ", ".join(f"{way} {times[way][-1]:.2f} s" for way in ways)
        )
    best = {way: min(values[1:]) for way, values in times.items()}
    print(f"\nbest of {args.rounds}:")
    print(f"plain change data feed -> Parquet:  {best['plain']:6.2f} s")
    print(f"plain change data feed -> Delta:    {best['plain_delta']:6.2f} s (for reference)")
    for way in ("volume", "table"):
        ratio = best["plain"] / best[way]
        verdict = "met" if ratio >= GOAL_RATIO else "NOT met"
        print(
            f"export to a {way:6}:  {best[way]:6.2f} s  ratio plain/export {ratio:.2f} "
            f"(goal >= {GOAL_RATIO}: {verdict})"
        )
    again, message = exported(lake, f"to_table_{args.rounds}", start, end)
    verdict = "met" if again <= GOAL_RESUME_SECONDS else "NOT met"
    print(
        f"the same export again, nothing new: {again:.2f} s (goal <= {GOAL_RESUME_SECONDS} s: "
        f"{verdict}): {message}"
    )
    return 0


def _fresh_export(lake: LakeSession, name: str, target: str, start: int, end: int) -> float:
    """A new export (its own status, so nothing is skipped) of the day, timed."""
    lake.sql(f"CREATE CHANGELOG EXPORT {name} FROM TABLE big TO {target} STATUS_TABLE = '{name}_s'")
    took, message = exported(lake, name, start, end)
    print(f"  {name}: {message}")
    return took


def _millis(commit: Commit) -> int:
    return int(commit.timestamp.replace(tzinfo=UTC).timestamp() * 1000)


if __name__ == "__main__":
    sys.exit(main())
