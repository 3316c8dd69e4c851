"""The fence of concurrent refreshes of one dynamic table: two refreshes that start from the same
committed refresh commit at most once between them, even when another commit to the dynamic table
(an ALTER, an OPTIMIZE) lands between their reads; the one fenced off plans again from the
other's commit."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.delta import delta_ref, history
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.steps import Refreshing
from lake_assets.session import LakeSession


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def test_two_refreshes_with_another_commit_between_their_reads_apply_the_changes_once(
    spark: SparkSession, lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refresh A reads the dynamic table, an ALTER commits to it, refresh B reads it, A commits,
    then B tries to: B must write nothing, or the same changes would be counted twice. B then
    plans again from A's commit and finds nothing new (NO_DATA)."""
    lake.sql(
        "CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1), ('b', 2);"
        "CREATE DYNAMIC TABLE s AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;"
        "INSERT INTO t VALUES ('a', 3), ('c', 4)"
    )
    location = lake.catalog.get(DynamicTableEntry, "s").location
    real, *rest = dynamic.STEPS
    b_planned, a_committed = threading.Event(), threading.Event()
    reads: list[int] = []
    outcome_b: list[Any] = []

    def run_b() -> None:
        try:
            outcome_b.append(dynamic.refresh(spark, lake.catalog, "s"))
        except Exception as error:
            outcome_b.append(error)
        finally:
            b_planned.set()

    b = threading.Thread(target=run_b)

    def reconcile(run: Refreshing) -> None:
        real(run)
        reads.append(history(spark, location, 1)[0].version)
        if len(reads) == 1:  # A has read: another commit, then B reads
            spark.sql(f"ALTER TABLE {delta_ref(location)} SET TBLPROPERTIES ('note' = 'x')")
            b.start()
            b_planned.wait()
        else:  # B has read: it goes on once A has committed
            b_planned.set()
            a_committed.wait()

    monkeypatch.setattr(dynamic, "STEPS", (reconcile, *rest))
    try:
        outcome_a = dynamic.refresh(spark, lake.catalog, "s")
    finally:
        a_committed.set()
        if b.ident is not None:
            b.join()

    assert reads == [1, 2, 3]
    assert (outcome_a.mode, outcome_a.version) == ("INCREMENTAL", 3)
    (again,) = outcome_b
    assert not isinstance(again, Exception), again
    assert (again.mode, again.version) == ("NO_DATA", None)
    assert rows(lake, "SELECT k, n FROM s ORDER BY k") == [("a", 2), ("b", 1), ("c", 1)]
    assert history(spark, location, 1)[0].version == 3
