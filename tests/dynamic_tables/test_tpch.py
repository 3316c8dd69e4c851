"""TPC-H's 22 queries as dynamic tables on a small generated database (DuckDB's dbgen, the
bench's change rounds): after each round of new orders, deleted orders and updates of every
table, each table equals its query run in full, and the queries the engine maintains refresh
INCREMENTAL while the others refresh FULL and say why."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from bench.tpch import change_round, differences, generate, load
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.session import LakeSession

SCALE = 0.002
# The queries refreshed INCREMENTAL as written; the rest are FULL for a reason their refresh
# records (Q11: an uncorrelated scalar subquery in HAVING; Q15: one over a WITH joined to a
# table).
INCREMENTAL = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22}


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
            expected = "INCREMENTAL" if number in INCREMENTAL else "FULL"
            assert (outcome.state, outcome.mode) == ("SUCCEED", expected), (number, outcome)
            assert (outcome.reason is None) == (number in INCREMENTAL), (number, outcome)
    # After the second round each table was refreshed from the state the first one left.
    for number, name in names.items():
        assert differences(lake, name, queries[number]) == 0, number
