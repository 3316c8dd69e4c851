"""A write with DROP ROW expectations killed between its quarantine's write and the table's
commit, or right after the commit: its dropped rows and its counts are kept once, or not at
all, and a write run again is judged afresh."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import STATEMENT_MARKER, records
from lake_assets.core.settings import LakeSettings
from lake_assets.core.writes import STATEMENT_COMMITTED
from lake_assets.session import LakeSession
from lake_assets.tables.enforcing import COUNTS
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.quarantine import QUARANTINED
from tests.crashes import Crash, crash_at, lake_sql_killed_at
from tests.ingest_helpers import rows

INSERT = "INSERT INTO t VALUES (1, 10), (2, -5)"


@pytest.fixture
def lake_home(spark: SparkSession, tmp_path: Path) -> LakeSession:
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    lake.sql(
        "CREATE TABLE t (id BIGINT, v INT, "
        "CONSTRAINT positive EXPECT (v > 0) ON VIOLATION DROP ROW)"
    )
    return lake


def counted(lake: LakeSession) -> list[dict[str, list[int]]]:
    location = lake.catalog.get(TableEntry, "t").location
    return [record[COUNTS] for _, record in records(None, location, STATEMENT_MARKER)]


def quarantined(lake: LakeSession) -> list[tuple]:
    return rows(lake, "SELECT id, v, expectation, commit_version FROM quarantined_rows('t')")


def test_a_write_killed_after_its_quarantine_leaves_nothing_seen(lake_home: LakeSession) -> None:
    lake = lake_home
    crashed = lake_sql_killed_at(lake.settings.lake_home, QUARANTINED, INSERT)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    assert quarantined(lake) == []  # the orphaned rows: no commit of t carries their tag
    assert counted(lake) == []

    lake.sql(INSERT)
    assert quarantined(lake) == [(2, -5, "positive", 1)]
    assert counted(lake) == [{"positive": [1, 1]}]
    assert rows(lake, "SELECT id, v FROM t") == [(1, 10)]


def test_a_write_crashed_after_its_commit_is_counted_once(
    lake_home: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = lake_home
    crash_at(monkeypatch, STATEMENT_COMMITTED)
    with pytest.raises(Crash):
        lake.sql(INSERT)
    monkeypatch.undo()
    assert lake.catalog.get(TableEntry, "t").version == 0  # the catalog never heard of it

    lake.sql("INSERT INTO t VALUES (3, 30)")
    assert counted(lake) == [{"positive": [1, 0]}, {"positive": [1, 1]}]
    assert quarantined(lake) == [(2, -5, "positive", 1)]
    assert lake.catalog.get(TableEntry, "t").row_count == 2
