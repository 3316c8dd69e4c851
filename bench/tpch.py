"""TPC-H's 22 queries as dynamic tables: FULL against INCREMENTAL (and AUTO) refreshes after a
0.1 % change, in one process on one Spark session.

    .venv/bin/python -u bench/tpch.py --scale 1

The data is DuckDB's TPC-H generator (dbgen) at --scale, written as Parquet and loaded into lake
tables; the queries are DuckDB's text of the 22, transpiled to Spark SQL by sqlglot, each created
three times as a dynamic table as written (ORDER BY, LIMIT and all): REFRESH_MODE = INCREMENTAL,
AUTO and FULL. A change round (see `change_round`) adds new orders with their lines, deletes
orders with their lines, and updates customers, parts, suppliers, part suppliers and lines. For
each query, after a round, each of the three refreshes from the same state (each writes the
change), timed, with where the time went and the Spark jobs, files and rows it read; each table
is compared with its query after its refresh (rows as multisets). Each query runs two rounds and
the second is counted: the first warms its plans up.
With --workload rf a round is TPC-H's own refresh functions instead: RF1 adds 0.1 % new orders
with their lines under keys above every existing one, RF2 deletes the 0.1 % oldest orders with
their lines; no dimension changes. The tables are written in dbgen's key order, ROWS_PER_FILE
rows per file, so that a read restricted to a change's key ranges skips files.
Goals: 22 of 22 INCREMENTAL; median INCREMENTAL/FULL ≤ 0.2; AUTO never above 1.1 times the
cheaper of INCREMENTAL and FULL.
The integration test (tests/dynamic_tables/test_tpch.py) runs the same rounds at a small scale."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb
import sqlglot
from duckdb_extensions import import_extension
from pyspark.sql import SparkSession

from bench.dynamic_refresh import timed_refresh
from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import latest_version, row_count
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.runtime import pruning
from lake_assets.dynamic_tables.runtime.pruning import ROWS_PER_FILE
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from resources.spark import DeltaSparkResource

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
# One round changes about this share of the orders (and their lines): 0.1 %.
ROUND_MODULUS = 1000


def generate(scale: float, directory: Path) -> dict[int, str]:
    """TPC-H's tables at `scale` as Parquet files in `directory`, and its 22 queries as Spark
    SQL by number."""
    import_extension("tpch")
    with duckdb.connect() as connection:
        connection.execute("LOAD tpch")
        connection.execute(f"CALL dbgen(sf={scale})")
        for table in TABLES:
            connection.execute(f"COPY {table} TO '{directory / table}.parquet' (FORMAT parquet)")
        texts = connection.execute("SELECT query_nr, query FROM tpch_queries()").fetchall()
    return {
        number: sqlglot.transpile(text, read="duckdb", write="spark")[0] for number, text in texts
    }


def load(spark: SparkSession, lake: LakeSession, directory: Path) -> None:
    """Each table created with the Parquet file's columns and filled from it."""
    for table in TABLES:
        frame = spark.read.parquet(str(directory / f"{table}.parquet"))
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in frame.schema.fields)
        lake.sql(f"CREATE TABLE {table} ({columns})")
        entry = lake.catalog.get(TableEntry, table)
        frame.write.format("delta").mode("append").option("maxRecordsPerFile", ROWS_PER_FILE).save(
            entry.location
        )
        version = latest_version(spark, entry.location)
        lake.catalog.record_table_state(entry, version, row_count(spark, entry.location, version))


ORDER_COLUMNS = (
    "o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, "
    "o_shippriority, o_comment"
)
LINE_COLUMNS = (
    "l_partkey, l_suppkey, l_linenumber, l_quantity + 1, l_extendedprice, l_discount, l_tax, "
    "l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, "
    "l_shipmode, l_comment"
)


def refresh_functions(lake: LakeSession, number: int) -> None:
    """RF1: 0.1 % new orders with their lines, under keys above every existing one (copies of
    the oldest); RF2: those oldest 0.1 % of the orders deleted with their lines."""
    (counted,) = lake.sql("SELECT COUNT(*), MAX(o_orderkey) FROM orders")
    count, top = counted.rows[0]
    oldest = max(1, int(count) // ROUND_MODULUS)
    (bounds,) = lake.sql(
        "SELECT MIN(o_orderkey), MAX(o_orderkey) FROM "
        f"(SELECT o_orderkey FROM orders ORDER BY o_orderkey LIMIT {oldest})"
    )
    low, high = bounds.rows[0]
    block = f"BETWEEN {low} AND {high}"
    lake.sql(
        f"INSERT INTO orders SELECT o_orderkey + {top}, {ORDER_COLUMNS} "
        f"FROM orders WHERE o_orderkey {block};"
        f"INSERT INTO lineitem SELECT l_orderkey + {top}, {LINE_COLUMNS} "
        f"FROM lineitem WHERE l_orderkey {block};"
        f"DELETE FROM lineitem WHERE l_orderkey {block};"
        f"DELETE FROM orders WHERE o_orderkey {block}"
    )


def change_round(lake: LakeSession, number: int) -> None:
    """About 0.1 % of the orders: new orders with their lines (copies of existing ones under new
    keys), deleted orders with their lines, and updates of customers, parts, suppliers, part
    suppliers and lines that move rows between groups (segments, brands, nations)."""
    (result,) = lake.sql("SELECT MAX(o_orderkey) FROM orders")
    offset = int(result.rows[0][0])
    picked = f"% {ROUND_MODULUS} = {number % ROUND_MODULUS}"
    dropped = f"% {ROUND_MODULUS} = {(number + 500) % ROUND_MODULUS}"
    lake.sql(
        f"INSERT INTO orders SELECT o_orderkey + {offset}, {ORDER_COLUMNS} "
        f"FROM orders WHERE o_orderkey {picked};"
        f"INSERT INTO lineitem SELECT l_orderkey + {offset}, {LINE_COLUMNS} "
        f"FROM lineitem WHERE l_orderkey {picked};"
        f"DELETE FROM lineitem WHERE l_orderkey {dropped};"
        f"DELETE FROM orders WHERE o_orderkey {dropped};"
        f"UPDATE lineitem SET l_discount = 0.05, l_quantity = l_quantity + 10 "
        f"WHERE l_orderkey % {ROUND_MODULUS} = {(number + 250) % ROUND_MODULUS};"
        f"UPDATE customer SET c_acctbal = c_acctbal + 100, c_mktsegment = 'BUILDING' "
        f"WHERE c_custkey {picked};"
        f"UPDATE part SET p_brand = 'Brand#23', p_size = 15 WHERE p_partkey {picked};"
        f"UPDATE supplier SET s_nationkey = (s_nationkey + 1) % 25, s_acctbal = s_acctbal - 50 "
        f"WHERE s_suppkey % 100 = {number % 100};"
        f"UPDATE partsupp SET ps_supplycost = ps_supplycost * 0.5, ps_availqty = ps_availqty + 1 "
        f"WHERE ps_partkey {picked}"
    )


def differences(lake: LakeSession, name: str, query: str) -> int:
    """Rows the dynamic table and its query, run now, do not share, counted as multisets (the
    results are small: TPC-H's queries aggregate or keep the top rows)."""
    (table,) = lake.sql(f"SELECT * FROM {name}")
    (recomputed,) = lake.sql(query)
    kept, expected = Counter(map(tuple, table.rows)), Counter(map(tuple, recomputed.rows))
    return sum(((kept - expected) + (expected - kept)).values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--queries", default="1-22", help="e.g. 1-22 or 3,10,18")
    parser.add_argument("--workload", choices=("spread", "rf"), default="spread")
    parser.add_argument(
        "--unrestricted", action="store_true", help="join terms read other sides whole (baseline)"
    )
    args = parser.parse_args()
    if args.unrestricted:
        pruning.RESTRICT_MIN_ROWS = sys.maxsize
    changes = refresh_functions if args.workload == "rf" else change_round
    wanted = _numbers(args.queries)
    root = Path(tempfile.mkdtemp(prefix="lake-bench-tpch-"))
    try:
        settings = LakeSettings(lake_home=root / "lake", jars_dir=LakeSettings.from_env().jars_dir)
        spark = DeltaSparkResource.from_settings(
            settings, console_log=str(root / "console.log")
        ).spark_session
        lake = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
        started = time.perf_counter()
        queries = generate(args.scale, root)
        load(spark, lake, root)
        print(f"TPC-H scale {args.scale}: generated and loaded in "
              f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
        ratios, incremental, worst_auto = [], 0, 0.0
        for round_number, number in enumerate(wanted, start=1):
            name, query = f"q{number:02d}", queries[number]
            tables = {mode: f"{name}_{mode.lower()}" for mode in ("INCREMENTAL", "AUTO", "FULL")}
            lake.sql(";".join(
                f"CREATE DYNAMIC TABLE {table} REFRESH_MODE = {mode} AS {query}"
                for mode, table in tables.items()
            ))  # fmt: skip
            timed, wrong = {}, 0
            for warm in (True, False):  # the first round warms this query's plans up
                changes(lake, 2 * round_number + warm)
                print(f"Q{number}{' (warm-up)' if warm else ''}:", flush=True)
                for mode, table in tables.items():
                    timed[mode] = timed_refresh(spark, lake.catalog, table, full=False)
                    wrong += differences(lake, table, query)
            (applied, chosen_mode), (chosen, auto_mode), (full, _) = timed.values()
            incremental += chosen_mode == "INCREMENTAL"
            worst_auto = max(worst_auto, chosen / min(applied, full))
            if chosen_mode == "INCREMENTAL":
                ratios.append(applied / full)
            print(f"  Q{number} {chosen_mode} {applied:.2f} s, AUTO ({auto_mode}) {chosen:.2f} s, "
                  f"FULL {full:.2f} s, ratio {applied / full:.2f}, "
                  f"AUTO/cheaper {chosen / min(applied, full):.2f}, "
                  f"differing rows {wrong}", flush=True)  # fmt: skip
        median = statistics.median(ratios) if ratios else float("nan")
        print(f"{incremental} of {len(wanted)} INCREMENTAL; median INCREMENTAL/FULL {median:.2f}; "
              f"AUTO at most {worst_auto:.2f}x the cheaper")  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _numbers(text: str) -> list[int]:
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(part) for part in text.split(",")]


if __name__ == "__main__":
    main()
