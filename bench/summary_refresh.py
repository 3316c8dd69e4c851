"""The walkthrough's summary (GROUP BY category over the pipe's table) refreshed after a 5-row
load, as the automation refreshes it: on a warm Spark Connect server, or with --local in this
process's own driver.

    .venv/bin/python -u -m bench.summary_refresh --rows 1000000

A table of --rows sales over 20 categories and its summary (COUNT, SUM, AVG, MIN, MAX by
category). Each of --rounds rounds loads 5 rows and refreshes the summary three ways on the same
warm session, each after its own load: as it runs by itself (AUTO: interpreted, see
choosing.compiled), incrementally with Spark's generated code (the baseline the interpreted
refresh replaces), and FULL. The first round warms up and is not counted. Prints each refresh with
where its time went, then the medians and their ratios; the summary is compared with its query at
the end. Goal: the summary refresh after a 5-row load on 1M rows at most 1.0 s."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from bench.dynamic_refresh import differences, timed_refresh
from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables import choosing
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource
from resources.spark_server import free_port, server_url, spawn_server, stop

SUMMARY = (
    "SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, "
    "AVG(amount) AS avg_amount, MIN(dt) AS min_date, MAX(dt) AS max_date "
    "FROM sales_ods GROUP BY category"
)
WAYS = ("as it runs", "compiled", "FULL")


def load(lake: LakeSession, first: int) -> None:
    """Five new sales, as one load commits them."""
    rows = ", ".join(f"({first + i}, 'cat-{i}', {i}.50, DATE'2024-02-0{i + 1}')" for i in range(5))
    lake.sql(f"INSERT INTO sales_ods VALUES {rows}")


def rounds(lake: LakeSession, catalog: Catalog, count: int, rows: int) -> dict[str, list[float]]:
    """Each way's refresh times over `count` rounds after the first."""
    spark = lake.spark
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    first = rows
    for number in range(count + 1):
        print(f"round {number}{' (warm-up)' if number == 0 else ''}:")
        for way in WAYS:
            load(lake, first)
            first += 5
            threshold = choosing.COMPILED_MIN_ROWS
            if way == "compiled":
                choosing.COMPILED_MIN_ROWS = 0
            try:
                elapsed, _ = timed_refresh(spark, catalog, "sales_summary", full=way == "FULL")
            finally:
                choosing.COMPILED_MIN_ROWS = threshold
            if number:
                times[way].append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--local", action="store_true", help="no Connect server")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-bench-summary-"))
    server = None
    try:
        settings = LakeSettings(lake_home=root / "lake", jars_dir=LakeSettings.from_env().jars_dir)
        if not args.local:
            port = free_port()
            env = {**os.environ, "LAKE_HOME": str(settings.lake_home), "LAKE_SPARK_REMOTE": ""}
            with open(root / "server.log", "w") as output:
                server = spawn_server(port, env, output)
            settings = LakeSettings(
                lake_home=settings.lake_home,
                jars_dir=settings.jars_dir,
                spark_remote=server_url(port),
            )
        spark = DeltaSparkResource.from_settings(
            settings, console_log=str(root / "console.log")
        ).spark_session
        catalog = Catalog(settings.catalog_location)
        lake = LakeSession(catalog, settings, lambda: spark)
        lake.sql(
            "CREATE TABLE sales_ods (id BIGINT, category STRING, amount DECIMAL(12,2), dt DATE);"
            "ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'true');"
            "INSERT INTO sales_ods SELECT id, concat('cat-', id % 20), "
            "CAST(id % 9991 AS DECIMAL(12,2)), date_add(DATE'2024-01-01', CAST(id % 300 AS INT)) "
            f"FROM range(0, {args.rows}, 1, 2);"
            f"CREATE DYNAMIC TABLE sales_summary AS {SUMMARY}"
        )
        where = "a warm Spark Connect server" if server else "this process's driver"
        print(f"sales_ods: {args.rows} rows; sales_summary created; refreshed on {where}")
        times = rounds(lake, catalog, args.rounds, args.rows)
        medians = {way: statistics.median(seconds) for way, seconds in times.items()}
        for way, median in medians.items():
            print(f"median {way}: {median:.2f} s ({median / medians['FULL']:.2f} of FULL)")
        print(f"as it runs / compiled: {medians['as it runs'] / medians['compiled']:.2f}")
        print(f"goal: at most 1.0 s after a 5-row load on 1M rows: {medians['as it runs']:.2f} s")
        differing = differences(spark, catalog, "sales_summary", SUMMARY)
        print(f"rows differing from the query: {differing}")
        spark.stop()
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
