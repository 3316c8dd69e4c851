"""An export refuses history that is no longer kept and retries transient failures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.run import _retrying
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.exports.export_helpers import KEYED, commit_times, ranged, records, rows, run, status
from tests.ingest_helpers import refused


def test_a_status_row_before_the_oldest_commit_kept_is_refused(lake: LakeSession) -> None:
    """Commit files before a checkpoint removed (as log retention does): an export that would
    resume before the oldest commit kept says so; one without a status row starts there."""
    lake.sql(f"{KEYED}; INSERT INTO t VALUES (1, 'a', NULL)")
    lake.sql("; ".join(f"INSERT INTO t VALUES ({k}, 'v{k}', NULL)" for k in range(2, 12)))
    times = commit_times(lake, "t")
    newest = max(times)
    assert newest >= 11
    lake.sql(
        "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r; "
        "CREATE CHANGELOG EXPORT fresh FROM TABLE t TO TABLE rf STATUS_TABLE = 'fresh_status'"
    )
    assert run(lake, ranged("e", 0, times[4]))["last_version"] == 3

    log = Path(lake.catalog.get(TableEntry, "t").location) / "_delta_log"
    assert sorted(p.name for p in log.glob("00000000000000000010.checkpoint*"))
    for version in range(10):
        for path in log.glob(f"{version:020d}.*"):
            path.unlink()
    assert rows(lake, "SELECT count(*) FROM t") == [(11,)]  # Delta reads it from the checkpoint

    assert refused(lake, ranged("e", times[4], times[newest] + 1)) == (
        "table t's history before version 10 is no longer kept, and the export needs it from "
        "version 4 — export ranges after the oldest commit kept (DESC HISTORY shows it), or "
        "keep history longer (Delta's delta.logRetentionDuration)"
    )
    assert len(status(lake)) == 1
    started = run(lake, ranged("fresh", times[4], times[newest] + 1))
    assert (started["first_version"], started["versions_read"]) == (10, newest - 9)
    assert [row[2] for row in records(lake, "rf")] == [times[v] for v in range(10, newest + 1)]


def failing(spark: SparkSession, text: str, attempts: list[int]) -> Callable[[], None]:
    """A real Spark query that fails with `text`, counting its attempts."""

    def action() -> None:
        attempts.append(1)
        spark.sql(f"SELECT raise_error('{text}')").collect()

    return action


def test_transient_failures_are_retried_max_retries_times(spark: SparkSession) -> None:
    export = ExportEntry("e", source="t", max_retries=2)
    attempts: list[int] = []
    with pytest.raises(PySparkException) as caught:
        _retrying(export, failing(spark, "java.io.IOException: storage did not answer", attempts))
    assert "storage did not answer" in str(caught.value)
    assert len(attempts) == 3  # the first try and MAX_RETRIES = 2 more

    attempts.clear()
    with pytest.raises(PySparkException):
        _retrying(export, failing(spark, "not a transient failure", attempts))
    assert len(attempts) == 1

    attempts.clear()
    calls = iter([failing(spark, "IOException: once", attempts), lambda: None])
    assert _retrying(export, lambda: next(calls)()) is None
    assert len(attempts) == 1


def test_a_transient_failure_of_a_write_is_retried(spark: SparkSession, tmp_path: Path) -> None:
    """A failure inside a write's tasks reaches Python as py4j's Py4JJavaError (Spark's
    TASK_WRITE_FAILED), not as a PySparkException: it is a transient failure all the same."""
    export = ExportEntry("e", source="t", max_retries=2)
    attempts: list[int] = []

    def write() -> None:
        attempts.append(1)
        spark.sql(
            "SELECT 1 AS a, CAST(raise_error('java.io.IOException: storage did not answer') "
            "AS INT) AS b"
        ).write.format("delta").mode("append").save(str(tmp_path / "target"))

    with pytest.raises(Exception, match=r"storage did not answer|TASK_WRITE_FAILED"):
        _retrying(export, write)
    assert len(attempts) == 3
