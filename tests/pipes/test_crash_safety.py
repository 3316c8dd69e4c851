"""Crash safety of COPY … PURGE: a `lake sql` process is SIGKILLed at each failpoint, then the
same COPY run again recovers — every file's rows exactly once, nothing purged before its commit."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import history
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.engine import BEFORE_PURGE
from lake_assets.pipes.load_records import load_history
from lake_assets.pipes.loading import AFTER_COMMIT, BEFORE_COMMIT
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.crashes import Crash, crash_at, lake_sql_killed_at
from tests.ingest_helpers import files, local_volume, message, put, rows

COPY = "COPY INTO t FROM VOLUME v USING CSV PURGE = TRUE"
FILES = {"a.csv": "1,a\n2,b\n", "b.csv": "3,c\n", "day=2/c.csv": "4,d\n5,e\n6,f\n"}
ROWS_PER_FILE = {"a.csv": 2, "b.csv": 1, "c.csv": 3}
# What the recovering COPY finds to do: everything, or only the purge a crash left undone.
RECOVERY = {
    BEFORE_COMMIT: ("COPY: 3 files loaded (6 rows), 0 failed, 3 purged; t is at version 1"),
    AFTER_COMMIT: "COPY: 0 files loaded (0 rows), 0 failed, 3 purged",
    BEFORE_PURGE: "COPY: 0 files loaded (0 rows), 0 failed, 3 purged",
}


@pytest.fixture
def home(spark: SparkSession, tmp_path: Path) -> tuple[LakeSession, Path]:
    """A lakehouse at tmp_path/lake with table t and volume v (tmp_path/incoming) of 3 files."""
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    for name, content in FILES.items():
        put(volume, name, content)
    return lake, volume


def load_commits(spark: SparkSession, lake: LakeSession) -> list[int]:
    """Versions of the commits that carry load records."""
    return [
        commit.version
        for commit in history(spark, lake.catalog.get(TableEntry, "t").location)
        if commit.user_metadata and "lake_load" in json.loads(commit.user_metadata)
    ]


@pytest.mark.parametrize("failpoint", [BEFORE_COMMIT, AFTER_COMMIT, BEFORE_PURGE])
def test_a_copy_killed_at_a_failpoint_recovers_exactly_once(
    spark: SparkSession, home: tuple[LakeSession, Path], failpoint: str
) -> None:
    lake, volume = home
    crashed = lake_sql_killed_at(lake.settings.lake_home, failpoint, COPY)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]

    # No file is purged before its rows are committed; every failpoint comes before the purge.
    assert files(volume) == sorted(FILES)
    committed = 0 if failpoint == BEFORE_COMMIT else 6
    assert rows(lake, "SELECT COUNT(*) FROM t") == [(committed,)]

    assert message(lake, COPY) == RECOVERY[failpoint]
    assert files(volume) == []
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [  # each row once: 6, distinct
        (1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"), (6, "f"),
    ]  # fmt: skip
    assert sorted(
        (r.file_path.rsplit("/", 1)[-1], r.status, r.rows_loaded, r.commit_version)
        for r in load_history(lake.catalog, "t")
    ) == [(name, "LOADED", count, 1) for name, count in sorted(ROWS_PER_FILE.items())]
    assert load_commits(spark, lake) == [1]
    entry = lake.catalog.get(TableEntry, "t")
    assert (entry.version, entry.row_count) == (1, 6)


def test_the_catalog_row_count_is_right_after_recovering_from_a_crash_after_the_commit(
    home: tuple[LakeSession, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, _ = home
    crash_at(monkeypatch, AFTER_COMMIT)
    with pytest.raises(Crash):
        lake.sql(COPY)
    monkeypatch.undo()
    assert message(lake, COPY) == RECOVERY[AFTER_COMMIT]
    entry = lake.catalog.get(TableEntry, "t")
    assert (entry.version, entry.row_count) == (1, 6)
