"""TPC-H's 22 queries as dynamic tables on a small generated database (DuckDB's dbgen, the
bench's change rounds): after each round of new orders, deleted orders and updates of every
table, each table equals its query run in full, and every refresh is INCREMENTAL."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from bench.tpch import change_round, differences, generate, load
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.session import LakeSession

SCALE = 0.002


def test_tpch_queries_equal_their_results_after_rounds_of_changes(
    spark: SparkSession, lake: LakeSession, tmp_path: Path
) -> None:
    """One test for the 22 (the suite starts it first): the database is generated, loaded and
    changed once for all of them."""
    queries = generate(SCALE, tmp_path)
    load(spark, lake, tmp_path)
    names = {number: f"q{number:02d}" for number in range(1, 23)}
    for number, name in names.items():
        lake.sql(f"CREATE DYNAMIC TABLE {name} AS {queries[number]}")
    for round_number in (1, 2):
        change_round(lake, round_number)
        for number, name in names.items():
            outcome = dynamic.refresh(spark, lake.catalog, name)
            assert (outcome.state, outcome.mode) == ("SUCCEED", "INCREMENTAL"), (number, outcome)
            assert outcome.reason is None, (number, outcome)
    # After the second round each table was refreshed from the state the first one left.
    for number, name in names.items():
        assert differences(lake, name, queries[number]) == 0, number
