"""A dynamic table's expectations on Spark: DROP ROW leaves rows out (and shows them in its
quarantine until a refresh lets them in), WARN counts the rows a refresh adds, FAIL refuses a
refresh that would add a failing row and commits nothing; Dagster shows each as a check of the
table's asset, evaluated on each refresh; a refresh crashed around its commit counts once."""

from __future__ import annotations

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from lake_assets.core.errors import LakeError
from lake_assets.definitions import build_definitions
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.refreshes import REFRESHES
from lake_assets.dynamic_tables.steps.commit import REFRESH_AFTER_COMMIT
from lake_assets.session import LakeSession
from lake_assets.tables.quarantine import QUARANTINED
from tests.crashes import Crash, crash_at
from tests.dynamic_tables.refresh_helpers import rows

SUMMARY = (
    "CREATE DYNAMIC TABLE d (k, total, n, "
    "CONSTRAINT positive EXPECT (total > 0) ON VIOLATION DROP ROW, "
    "CONSTRAINT few EXPECT (n < 3)) "
    "AS SELECT k, SUM(v) AS total, COUNT(*) AS n FROM t GROUP BY k"
)


def counts(lake: LakeSession) -> dict[str, list[int]]:
    """The expectations' counts in the newest refresh record."""
    (newest, *_) = REFRESHES.newest_first(lake.catalog, "d")
    found = newest.expectations
    assert found is not None, newest
    return found


def test_drop_row_warn_and_fail_on_refreshes_shown_as_checks(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1), ('b', -2), ('b', 1)")
    lake.sql(SUMMARY)
    # b's total is -1: left out, and in the quarantine with the version that left it out.
    assert rows(lake, "SELECT k, total, n FROM d") == [("a", 1, 1)]
    assert rows(
        lake, "SELECT k, total, n, expectation, commit_version FROM quarantined_rows('d')"
    ) == [("b", -1, 2, "positive", 1)]

    # In Dagster: a check per expectation, evaluated by the refresh the asset runs.
    lake.sql("INSERT INTO t VALUES ('b', 5), ('a', 1), ('a', 1)")
    defs = build_definitions(lake.settings)
    keys = {AssetCheckKey(AssetKey("d"), "positive"), AssetCheckKey(AssetKey("d"), "few")}
    assert keys <= set(defs.resolve_asset_graph().asset_check_keys)
    with DagsterInstance.ephemeral() as instance:
        job = defs.resolve_implicit_global_asset_job_def()
        result = job.execute_in_process(instance=instance, asset_selection=[AssetKey("d")])
        assert result.success
        verdicts = {
            e.check_name: (e.passed, e.metadata["passed"].value, e.metadata["failed"].value)
            for e in result.get_asset_check_evaluations()
        }
        (event,) = result.get_asset_materialization_events()
        recorded = event.materialization.metadata["lake/expectations"].value
    # b (4, 3) is let in; a (3, 3) and b are the rows added, both with n >= 3 (WARN).
    assert rows(lake, "SELECT k, total, n FROM d ORDER BY k") == [("a", 3, 3), ("b", 4, 3)]
    assert verdicts == {"positive": (True, 2, 0), "few": (False, 0, 2)}
    assert recorded == {"positive": [2, 0], "few": [0, 2]}
    assert rows(lake, "SELECT * FROM quarantined_rows('d')") == []

    # Incremental equals full with rows left out: b falls below zero again.
    lake.sql("UPDATE t SET v = -9 WHERE k = 'b' AND v = 5")
    outcome = dynamic.refresh(lake.spark, lake.catalog, "d")
    assert outcome.mode == "INCREMENTAL"
    assert rows(lake, "SELECT k, total, n FROM d") == [("a", 3, 3)]
    assert rows(lake, "SELECT k, total FROM quarantined_rows('d')") == [("b", -10)]
    # The refresh only removed b: no row added to judge for few.
    assert counts(lake) == {"positive": [1, 1], "few": [0, 0]}


def test_a_failing_refresh_commits_nothing_and_bad_declarations_change_nothing(
    lake: LakeSession,
) -> None:
    lake.sql(
        "CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1);"
        "CREATE DYNAMIC TABLE e (k, v, CONSTRAINT small EXPECT (v < 10) ON VIOLATION FAIL) "
        "AS SELECT k, v FROM t WHERE v > 0"
    )
    lake.sql("INSERT INTO t VALUES ('c', 50)")
    version = lake.catalog.stored("e").version
    with pytest.raises(LakeError) as failed:
        dynamic.refresh(lake.spark, lake.catalog, "e")
    assert str(failed.value).startswith(
        "the refresh of dynamic table e violates expectation small (v < 10, ON VIOLATION FAIL) "
        "in 1 of 1 rows, e.g. (k='c', v=50); nothing was written"
    )
    assert lake.catalog.stored("e").version == version
    assert rows(lake, "SELECT k, v FROM e") == [("a", 1)]

    odd = "expectation odd of dynamic table f"
    bad = {
        "(v)": f"{odd} is not a condition: (v) is INT",
        "(w > 0)": f"{odd} reads w, which is not a column of dynamic table f",
        "(rand() > 0.5)": f"{odd} uses a non-deterministic function: RAND()",
    }
    for condition, message in bad.items():
        with pytest.raises(LakeError) as refused:
            lake.sql(
                f"CREATE DYNAMIC TABLE f (k, v, CONSTRAINT odd EXPECT {condition}) "
                "AS SELECT k, v FROM t"
            )
        assert str(refused.value).startswith(message), str(refused.value)
        assert lake.catalog.find_relation("f") is None


def test_a_refresh_crashed_around_its_commit_counts_and_quarantines_once(
    lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake.sql("CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1), ('b', -2), ('b', 1)")
    lake.sql(SUMMARY)
    lake.sql("INSERT INTO t VALUES ('c', -3)")
    left_out = "SELECT k, total, commit_version FROM quarantined_rows('d') ORDER BY k"

    # Its left-out rows written, then the crash: nobody sees them, nothing is counted.
    crash_at(monkeypatch, QUARANTINED)
    with pytest.raises(Crash):
        dynamic.refresh(lake.spark, lake.catalog, "d")
    monkeypatch.undo()
    assert rows(lake, left_out) == [("b", -1, 1)]

    # Committed, then the crash before the catalog heard of it: its rows and counts, once.
    crash_at(monkeypatch, REFRESH_AFTER_COMMIT)
    with pytest.raises(Crash):
        dynamic.refresh(lake.spark, lake.catalog, "d")
    monkeypatch.undo()
    assert rows(lake, left_out) == [("b", -1, 2), ("c", -3, 2)]
    assert dynamic.refresh(lake.spark, lake.catalog, "d").mode == "NO_DATA"
    committed = [r for r in REFRESHES.newest_first(lake.catalog, "d") if r.dt_version == 2]
    assert [r.expectations for r in committed] == [{"positive": [1, 2], "few": [0, 0]}]
