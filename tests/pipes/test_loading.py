"""COPY INTO a table on real Spark + Delta: each file loaded exactly once, failing files alone."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import history
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes import planning
from lake_assets.pipes.load_records import LoadRecord, load_history, load_mark, record_loads
from lake_assets.session import LakeSession
from lake_assets.sql.grammar import StatementError
from lake_assets.tables.entry import TableEntry
from resources.storage import FileInfo
from tests.ingest_helpers import age, files, local_volume, message, mtime, put, rows
from tests.pipes.loading_helpers import COPY, NO_CHANGE, assert_catalog_matches, records_by_name

# --- COPY INTO a table: each file once, load_history, FORCE, same-name re-uploads, retention ---


def test_copy_loads_each_file_once_and_load_history_keeps_its_record(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    a = put(volume, "a.csv", "1,a\n2,b\n")
    b = put(volume, "day=2/b.csv", "3,c\n")
    assert message(lake, COPY) == (
        "COPY: 2 files loaded (3 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert message(lake, COPY) == NO_CHANGE
    assert rows(
        lake,
        "SELECT file_path, status, rows_loaded, file_size, first_error_message, pipe_name, "
        "commit_version FROM load_history('t') ORDER BY file_path",
    ) == [
        (a.as_uri(), "LOADED", 2, 8, None, None, 1),
        (b.as_uri(), "LOADED", 1, 4, None, None, 1),
    ]
    assert_catalog_matches(lake, "t", version=1, count=3)

    assert message(lake, f"{COPY} FORCE = TRUE") == (
        "COPY: 2 files loaded (3 rows), 0 failed, 0 purged; t is at version 2"
    )
    assert_catalog_matches(lake, "t", version=2, count=6)

    # The same path uploaded again with new content is not loaded: its records block it, and a
    # record says it was skipped (tests/pipes/test_changed_files.py has the rest).
    put(volume, "a.csv", "7,x\n8,y\n9,z\n")
    assert message(lake, COPY) == f"{NO_CHANGE}, 1 skipped: {planning.CHANGED_SINCE_LOADED}"
    kept = [r for r in load_history(lake.catalog, "t") if r.file_path == a.as_uri()]
    assert [(r.status, r.rows_loaded, r.file_size, r.commit_version) for r in kept] == [
        ("SKIPPED_CHANGED", 0, 12, None),
        ("LOADED", 2, 8, 2),
        ("LOADED", 2, 8, 1),
    ]

    # Once the records are older than the retention window (LAKE_LOAD_HISTORY_DAYS, 7 days by
    # default; 1 minute here), the same paths load again.
    ten_minutes_ago = datetime.now(UTC) - timedelta(minutes=10)
    with sqlite3.connect(lake.settings.catalog_path) as db:
        db.execute(
            "UPDATE load_history SET last_copy_time = ?",
            (ten_minutes_ago.isoformat(timespec="milliseconds"),),
        )
    settings = LakeSettings(lake_home=lake.settings.lake_home, load_history_days=1 / 24 / 60)
    brief = LakeSession(Catalog(settings.catalog_path), settings, lambda: lake.spark)
    assert rows(brief, "SELECT COUNT(*) FROM load_history('t')") == [(0,)]
    assert message(brief, COPY) == (
        "COPY: 2 files loaded (4 rows), 0 failed, 0 purged; t is at version 3"
    )
    assert_catalog_matches(lake, "t", version=3, count=10)
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [
        (i,) for i in (1, 1, 2, 2, 3, 3, 3, 7, 8, 9)
    ]


# --- bad input: failing files fail alone, are not retried unchanged, and are never purged ---


def test_bad_files_fail_alone_and_only_loaded_files_are_purged(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "good.csv", "1,a\n2,b\n")
    put(volume, "bad_type.csv", "3,c\nx,d\n")
    put(volume, "short.csv", "4\n")
    put(volume, "empty.csv", "")
    for name in ("x.csv.tmp", "upload.csv.partial", ".hidden.csv", "_manifest.csv"):
        put(volume, name, "5,e\n")  # half-written, hidden and bookkeeping files are not data
    growing = put(volume, "growing.csv", "6,f\n", seconds=-3600)  # still being written

    assert message(lake, f"{COPY} PURGE = TRUE") == (
        "COPY: 2 files loaded (2 rows), 2 failed, 2 purged; t is at version 1"
    )
    records = records_by_name(lake, "t")
    assert {n: (r.status, r.rows_loaded, r.first_error_message) for n, r in records.items()} == {
        "good.csv": ("LOADED", 2, None),
        "empty.csv": ("LOADED", 0, None),
        "bad_type.csv": ("LOAD_FAILED", 0, "column id: 'x' is not a valid BIGINT"),
        "short.csv": (
            "LOAD_FAILED",
            0,
            "the row has 1 fields but the table has 2 columns: 4",
        ),
    }
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,)]  # no row of a failed file
    assert files(volume) == [
        ".hidden.csv",
        "_manifest.csv",
        "bad_type.csv",
        "growing.csv",
        "short.csv",
        "upload.csv.partial",
        "x.csv.tmp",
    ]

    # A failed file is not tried again until it changes; nothing failed is purged.
    assert message(lake, f"{COPY} PURGE = TRUE") == NO_CHANGE
    put(volume, "bad_type.csv", "3,c\n9,d\n")  # fixed and uploaded again
    age(growing)  # finished
    assert message(lake, f"{COPY} PURGE = TRUE") == (
        "COPY: 2 files loaded (3 rows), 0 failed, 2 purged; t is at version 2"
    )
    assert files(volume) == [
        ".hidden.csv",
        "_manifest.csv",
        "short.csv",
        "upload.csv.partial",
        "x.csv.tmp",
    ]
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,), (6,), (9,)]
    assert lake.catalog.get(TableEntry, "t").row_count == 5


def test_which_files_are_pending_settle_window_and_retention(tmp_path: Path) -> None:
    """The boundaries themselves, without Spark: planning.plan_files decides them."""
    catalog = Catalog(tmp_path / "catalog.db")
    now = datetime.now(UTC)

    def info(name: str, seconds_ago: float) -> FileInfo:
        return FileInfo(name, 1, now - timedelta(seconds=seconds_ago), "e", f"file:///x/{name}")

    def loaded(name: str, days_ago: float) -> LoadRecord:
        when = (now - timedelta(days=days_ago)).isoformat(timespec="milliseconds")
        return LoadRecord(f"file:///x/{name}", when, 1, None, "LOADED", 1, None, None, 1)

    # Modified less than a second ago (or dated ahead): maybe still being written.
    listed = [info("old.csv", 1.5), info("new.csv", 0.0), info("ahead.csv", -30)]
    assert planning.SETTLE_SECONDS == 1.0
    assert [f.relative_path for f in planning.plan_files(catalog, "t", listed, 7.0).pending] == [
        "old.csv"
    ]
    forced = planning.plan_files(catalog, "t", listed, 7.0, force=True).pending
    assert [f.relative_path for f in forced] == ["old.csv"]  # FORCE does not read half files

    # A path loaded within the retention window is not loaded again; an older load has expired.
    record_loads(catalog, "t", [loaded("six.csv", 6), loaded("eight.csv", 8)], None)
    listed = [info("six.csv", 60), info("eight.csv", 60)]
    assert [f.relative_path for f in planning.plan_files(catalog, "t", listed, 7.0).pending] == [
        "eight.csv"
    ]
    assert LakeSettings(lake_home=tmp_path).load_history_days == 7.0


def test_copy_with_a_column_list_reads_files_by_it(lake: LakeSession, tmp_path: Path) -> None:
    """A column list read from CSV files, `(order_id INT, amount DECIMAL(10,2), status STRING)
    USING CSV OPTIONS ('header' = 'true')`; a list in another order maps onto the table's columns
    by name."""
    volume = local_volume(lake, tmp_path / "orders_incoming", "orders_pipe_vol", "my_oss_conn")
    lake.sql(
        "CREATE TABLE IF NOT EXISTS orders (order_id INT, amount DECIMAL(10,2), status STRING)"
    )
    put(volume, "o1.csv", "order_id,amount,status\n1,10.50,paid\n2,20.00,new\n")
    put(volume, "o2.csv", "order_id,amount,status\n")
    assert message(
        lake,
        "COPY INTO orders FROM VOLUME orders_pipe_vol (order_id INT, amount DECIMAL(10,2), "
        "status STRING) USING CSV OPTIONS('header' = 'true') PURGE = TRUE",
    ) == ("COPY: 2 files loaded (2 rows), 0 failed, 2 purged; orders is at version 1")

    put(volume, "o3.csv", "shipped,3,30.25\n")
    with pytest.raises(StatementError, match="column status of table orders is not in the COPY"):
        lake.sql(
            "COPY INTO orders FROM VOLUME orders_pipe_vol (order_id INT, amount INT) USING CSV"
        )
    assert message(
        lake,
        "COPY INTO orders FROM VOLUME orders_pipe_vol (status STRING, order_id INT, "
        "amount DECIMAL(10,2)) USING CSV",
    ) == ("COPY: 1 files loaded (1 rows), 0 failed, 0 purged; orders is at version 2")
    assert rows(lake, "SELECT * FROM orders ORDER BY order_id") == [
        (1, Decimal("10.50"), "paid"),
        (2, Decimal("20.00"), "new"),
        (3, Decimal("30.25"), "shipped"),
    ]


# --- exactly once: the load records ride in the data commit; a lost index is rebuilt ---


def test_each_copy_is_one_commit_and_a_lost_index_is_rebuilt_from_the_commits(
    spark: SparkSession, lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    a, b = put(volume, "a.csv", "1,a\n2,b\n"), put(volume, "b.csv", "3,c\n")
    lake.sql(COPY)
    c = put(volume, "c.csv", "4,d\n")
    lake.sql(COPY)

    commits = history(spark, lake.catalog.get(TableEntry, "t").location)
    assert [(commit.version, commit.operation) for commit in commits] == [
        (2, "WRITE"),
        (1, "WRITE"),
        (0, "CREATE TABLE"),
    ]
    carried = {
        commit.version: json.loads(commit.user_metadata)["files"]
        for commit in commits
        if commit.version
    }
    assert carried == {
        1: [[a.as_uri(), 8, mtime(a), 2, 0], [b.as_uri(), 4, mtime(b), 1, 0]],
        2: [[c.as_uri(), 4, mtime(c), 1, 0]],
    }

    # The index is lost (or was never written).
    with sqlite3.connect(lake.settings.catalog_path) as db:
        db.execute("DELETE FROM load_history")
        db.execute("DELETE FROM load_marks")
    assert message(lake, COPY) == NO_CHANGE
    assert sorted(
        (r.file_path, r.status, r.rows_loaded, r.commit_version)
        for r in load_history(lake.catalog, "t")
    ) == [
        (a.as_uri(), "LOADED", 2, 1),
        (b.as_uri(), "LOADED", 1, 1),
        (c.as_uri(), "LOADED", 1, 2),
    ]
    assert_catalog_matches(lake, "t", version=2, count=4)


def test_the_index_mark_follows_each_load_and_a_rebuild_reads_back_far_enough(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    inserts = ";".join(f"INSERT INTO t VALUES ({i}, 'x')" for i in range(10, 18))
    lake.sql(inserts)  # versions 1-8: commits without load records
    a = put(volume, "a.csv", "1,a\n")
    assert message(lake, COPY) == (
        "COPY: 1 files loaded (1 rows), 0 failed, 0 purged; t is at version 9"
    )
    assert load_mark(lake.catalog, "t") == 9  # the next load need not read its own commit again

    lake.sql(inserts)  # versions 10-17: the load's commit is more than 8 commits back
    with sqlite3.connect(lake.settings.catalog_path) as db:
        db.execute("DELETE FROM load_history")
        db.execute("DELETE FROM load_marks")
    assert message(lake, COPY) == NO_CHANGE
    assert [(r.file_path, r.commit_version) for r in load_history(lake.catalog, "t")] == [
        (a.as_uri(), 9)
    ]
    assert load_mark(lake.catalog, "t") == 17
    assert_catalog_matches(lake, "t", version=17, count=17)
