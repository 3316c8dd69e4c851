"""Volumes, COPY INTO and pipes on real Spark + Delta: sales files ingested exactly once."""

from __future__ import annotations

import io
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import history
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes import loading
from lake_assets.pipes.engine import polling_text
from lake_assets.pipes.load_records import LoadRecord, load_history, load_mark, record_loads
from lake_assets.session import LakeSession
from lake_assets.sql.grammar import StatementError
from lake_assets.tables.entry import TableEntry
from resources.secrets import unseal
from resources.storage import FileInfo
from tests.ingest_helpers import (
    SALES_COLUMNS,
    SALES_ROWS,
    SALES_SOURCE,
    age,
    age_all,
    files,
    local_volume,
    message,
    mtime,
    properties,
    put,
    rows,
)
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, new_bucket

COPY = "COPY INTO t FROM VOLUME v USING CSV"
NO_CHANGE = "COPY: 0 files loaded (0 rows), 0 failed, 0 purged"


def assert_catalog_matches(lake: LakeSession, table: str, version: int, count: int) -> None:
    """The catalog's version and row count (SHOW TABLES, Dagster metadata) are the table's."""
    entry = lake.catalog.get(TableEntry, table)
    assert (entry.version, entry.row_count) == (version, count)
    assert rows(lake, f"SELECT COUNT(*) FROM {table}") == [(count,)]


def records_by_name(lake: LakeSession, table: str) -> dict[str, LoadRecord]:
    return {r.file_path.rsplit("/", 1)[-1]: r for r in load_history(lake.catalog, table)}


def no_spark() -> SparkSession:
    raise AssertionError("this statement must not start Spark")


# --- export to a volume, list it, query its files, load them back ---


def test_export_to_a_volume_then_query_and_load_its_files(
    lake: LakeSession, tmp_path: Path
) -> None:
    lake.sql(SALES_SOURCE)
    data = local_volume(lake, tmp_path / "data", "my_data_vol", "my_oss_conn", auto_refresh=False)
    assert message(
        lake,
        "COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source "
        "FILE_FORMAT = (TYPE = CSV)",
    ) == ("exported to volume my_data_vol: export/part00001.csv")
    assert message(
        lake,
        "COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source "
        "FILE_FORMAT = (TYPE = PARQUET)",
    ) == ("exported to volume my_data_vol: export/part00001.parquet")

    listing = (
        "SELECT relative_path, size, last_modified_time FROM DIRECTORY(VOLUME my_data_vol) "
        "WHERE relative_path LIKE 'export/%' ORDER BY relative_path"
    )
    assert rows(lake, listing) == []  # AUTO_REFRESH = FALSE: the directory waits for REFRESH
    assert message(lake, "ALTER VOLUME my_data_vol REFRESH") == (
        "refreshed volume my_data_vol: 2 files"
    )
    listed = rows(lake, listing)
    assert [(path, size) for path, size, _ in listed] == [
        ("export/part00001.csv", (data / "export/part00001.csv").stat().st_size),
        ("export/part00001.parquet", (data / "export/part00001.parquet").stat().st_size),
    ]
    assert all(isinstance(modified, datetime) for _, _, modified in listed)

    (csv,) = lake.sql("SELECT * FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv')")
    assert csv.columns == ["f0", "f1", "f2", "f3", "f4"]  # no header, no column list
    assert sorted(tuple(row) for row in csv.rows) == [
        (str(i), product, category, f"{amount:.2f}", dt)
        for i, product, category, amount, dt in SALES_ROWS
    ]
    (parquet,) = lake.sql(
        "SELECT id, product, category, amount, dt FROM VOLUME my_data_vol "
        "USING PARQUET FILES('export/part00001.parquet') ORDER BY id"
    )
    assert [tuple(row) for row in parquet.rows] == SALES_ROWS  # names and types kept

    # Another export never overwrites; without SUBDIRECTORY (or with '/') it lands at the root.
    assert message(
        lake,
        "COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source "
        "FILE_FORMAT = (TYPE = CSV)",
    ) == ("exported to volume my_data_vol: export/part00002.csv")
    assert message(
        lake,
        "COPY INTO VOLUME my_data_vol FROM (SELECT id, product FROM sales_source "
        "WHERE category = 'Sports') FILE_FORMAT = (TYPE = CSV)",
    ) == ("exported to volume my_data_vol: part00001.csv")
    assert sorted((data / "part00001.csv").read_text().splitlines()) == [
        "4,Nike Air Max",
        "5,Yoga Mat",
    ]
    assert files(data) == [
        "export/part00001.csv",
        "export/part00001.parquet",
        "export/part00002.csv",
        "part00001.csv",
    ]

    # COPY INTO TABLE imports the 5 rows from CSV and from Parquet.
    age_all(data)
    lake.sql(f"CREATE TABLE sales_ods ({SALES_COLUMNS})")
    assert message(
        lake, "COPY INTO sales_ods FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv')"
    ) == ("COPY: 1 files loaded (5 rows), 0 failed, 0 purged; sales_ods is at version 1")
    assert message(
        lake,
        "COPY INTO sales_ods FROM VOLUME my_data_vol USING PARQUET SUBDIRECTORY 'export' "
        "FILES('part00001.parquet')",
    ) == ("COPY: 1 files loaded (5 rows), 0 failed, 0 purged; sales_ods is at version 2")
    assert rows(lake, "SELECT * FROM sales_ods ORDER BY id") == sorted(SALES_ROWS * 2)


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
    assert message(lake, COPY) == f"{NO_CHANGE}, 1 skipped: {loading.CHANGED_SINCE_LOADED}"
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
    """The boundaries themselves, without Spark: loading.plan_files decides them."""
    catalog = Catalog(tmp_path / "catalog.db")
    now = datetime.now(UTC)

    def info(name: str, seconds_ago: float) -> FileInfo:
        return FileInfo(name, 1, now - timedelta(seconds=seconds_ago), "e", f"file:///x/{name}")

    def loaded(name: str, days_ago: float) -> LoadRecord:
        when = (now - timedelta(days=days_ago)).isoformat(timespec="milliseconds")
        return LoadRecord(f"file:///x/{name}", when, 1, None, "LOADED", 1, None, None, 1)

    # Modified less than a second ago (or dated ahead): maybe still being written.
    listed = [info("old.csv", 1.5), info("new.csv", 0.0), info("ahead.csv", -30)]
    assert loading.SETTLE_SECONDS == 1.0
    assert [f.relative_path for f in loading.plan_files(catalog, "t", listed, 7.0).pending] == [
        "old.csv"
    ]
    forced = loading.plan_files(catalog, "t", listed, 7.0, force=True).pending
    assert [f.relative_path for f in forced] == ["old.csv"]  # FORCE does not read half files

    # A path loaded within the retention window is not loaded again; an older load has expired.
    record_loads(catalog, "t", [loaded("six.csv", 6), loaded("eight.csv", 8)], None)
    listed = [info("six.csv", 60), info("eight.csv", 60)]
    assert [f.relative_path for f in loading.plan_files(catalog, "t", listed, 7.0).pending] == [
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
        1: [[a.as_uri(), 8, mtime(a), 2], [b.as_uri(), 4, mtime(b), 1]],
        2: [[c.as_uri(), 4, mtime(c), 1]],
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


# --- pipes: a LIST_PURGE pipe and its management statements ---


def test_a_list_purge_pipe_loads_and_is_managed(lake: LakeSession, tmp_path: Path) -> None:
    lake.sql(SALES_SOURCE)
    incoming = local_volume(lake, tmp_path / "incoming", "pipe_vol", "my_oss_conn")
    lake.sql(f"CREATE TABLE IF NOT EXISTS sales_ods ({SALES_COLUMNS})")
    created = message(
        lake,
        "CREATE PIPE IF NOT EXISTS sales_pipe INGEST_MODE = 'LIST_PURGE' "
        "VIRTUAL_CLUSTER = 'DEFAULT' COMMENT 'Sales data continuous ingestion pipeline' "
        "AS COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE",
    )
    assert created == (
        "created pipe sales_pipe: RUNNING, looks for new files in volume pipe_vol every 5 s "
        "(with the Dagster daemon running)"
    )
    assert polling_text(2) == "every 5 s (POLL_INTERVAL = 2, on the Dagster daemon's 5-s loop)"
    described = properties(lake, "DESC PIPE EXTENDED sales_pipe")
    assert {
        key: described[key]
        for key in (
            "pipe_status", "pipe_kind", "ingest_mode", "input_name", "output_name",
            "copy_statement", "virtual_cluster", "invalid_reason", "files_pending",
            "poll_interval_seconds",
        )
    } == {
        "pipe_status": "RUNNING",
        "pipe_kind": "VOLUME",
        "ingest_mode": "LIST_PURGE",
        "input_name": "pipe_vol",
        "output_name": "sales_ods",
        "copy_statement": "COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE",
        "virtual_cluster": "DEFAULT",
        "invalid_reason": None,
        "files_pending": 0,
        "poll_interval_seconds": 5,
    }  # fmt: skip

    # "Simulate new file arrival via COPY INTO VOLUME"
    assert message(
        lake,
        "COPY INTO VOLUME pipe_vol SUBDIRECTORY '/' FROM (SELECT * FROM sales_source "
        "WHERE dt = '2026-06-01') FILE_FORMAT = (TYPE = CSV)",
    ) == ("exported to volume pipe_vol: part00001.csv")
    age_all(incoming)
    assert properties(lake, "DESC PIPE sales_pipe")["files_pending"] == 1

    assert message(lake, "ALTER PIPE sales_pipe SET PIPE_EXECUTION_PAUSED = TRUE") == (
        "pipe sales_pipe is PAUSED"
    )
    assert properties(lake, "DESC PIPE EXTENDED sales_pipe")["pipe_status"] == "PAUSED"
    assert rows(lake, "SHOW PIPES") == [
        ("sales_pipe", "PAUSED", "VOLUME", "pipe_vol", "sales_ods", "LIST_PURGE",
         "Sales data continuous ingestion pipeline"),
    ]  # fmt: skip
    assert message(lake, "ALTER PIPE sales_pipe SET PIPE_EXECUTION_PAUSED = FALSE") == (
        "pipe sales_pipe is RUNNING"
    )

    # ALTER PIPE … REFRESH loads now, with the pipe's own COPY (PURGE).
    assert message(lake, "ALTER PIPE sales_pipe REFRESH") == (
        "COPY: 1 files loaded (5 rows), 0 failed, 1 purged; sales_ods is at version 1"
    )
    assert files(incoming) == []
    assert rows(lake, "SELECT * FROM sales_ods ORDER BY id") == SALES_ROWS
    assert rows(
        lake, "SELECT file_path, status, rows_loaded, pipe_name FROM load_history('sales_ods')"
    ) == [((incoming / "part00001.csv").as_uri(), "LOADED", 5, "sales_pipe")]
    described = properties(lake, "DESC PIPE EXTENDED sales_pipe")
    assert (described["files_pending"], described["files_loaded"]) == (0, 1)
    assert described["last_load"] is not None

    # One pipe per volume; the COPY statement cannot change; a pipe's volume cannot go.
    with pytest.raises(StatementError, match="volume pipe_vol already feeds pipe sales_pipe"):
        lake.sql("CREATE PIPE other_pipe AS COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV")
    with pytest.raises(StatementError, match="lake_automation is taken by one of the project's"):
        lake.sql("CREATE PIPE lake_automation AS COPY INTO sales_ods FROM VOLUME v USING CSV")
    for change in ("COMMENT = 'x'", "INGEST_MODE = 'EVENT_NOTIFICATION'", "POLL_INTERVAL = 1"):
        with pytest.raises(StatementError, match="cannot"):
            lake.sql(f"ALTER PIPE sales_pipe SET {change}")
    with pytest.raises(StatementError, match="volume pipe_vol is used by pipe sales_pipe"):
        lake.sql("DROP VOLUME pipe_vol")
    with pytest.raises(StatementError, match="connection my_oss_conn is used by volume pipe_vol"):
        lake.sql("DROP STORAGE CONNECTION my_oss_conn")
    assert [row[:4] for row in rows(lake, "SHOW VOLUMES")] == [
        ("pipe_vol", f"{incoming.as_uri()}/", "my_oss_conn", True)
    ]
    assert [row[:3] for row in rows(lake, "SHOW CONNECTIONS")] == [("my_oss_conn", "LOCAL", None)]

    # DROP PIPE keeps the table's rows; then the volume may go (its files stay: it is external).
    assert message(lake, "DROP PIPE sales_pipe") == "dropped pipe sales_pipe"
    assert rows(lake, "SHOW PIPES") == []
    assert rows(lake, "SELECT COUNT(*) FROM sales_ods") == [(5,)]
    put(incoming, "kept.csv", "6,x,y,1.00,z\n")
    assert message(lake, "DROP VOLUME pipe_vol") == "dropped volume pipe_vol"
    assert files(incoming) == ["kept.csv"]
    assert rows(lake, "SHOW VOLUMES") == []


def test_connection_secrets_are_never_shown_nor_stored_in_clear(tmp_path: Path) -> None:
    settings = LakeSettings(lake_home=tmp_path)
    lake = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    lake.sql(
        "CREATE STORAGE CONNECTION IF NOT EXISTS my_s3 TYPE S3 ENDPOINT = 'http://127.0.0.1:9' "
        "ACCESS_ID = 'AKIDEXAMPLE' ACCESS_KEY = 'sekrit' REGION = 'us-east-1';"
        "CREATE STORAGE CONNECTION IF NOT EXISTS my_s3 TYPE LOCAL;"
        "CREATE STORAGE CONNECTION files TYPE LOCAL"
    )
    described = properties(lake, "DESC CONNECTION my_s3")
    assert {k: v for k, v in described.items() if k != "created_at"} == {
        "name": "my_s3",
        "type": "S3",
        "endpoint": "http://127.0.0.1:9",
        "access_id": "****",
        "access_key": "****",
        "region": "us-east-1",
        "role_arn": None,
    }
    assert [row[:3] for row in rows(lake, "SHOW CONNECTIONS")] == [
        ("files", "LOCAL", None),
        ("my_s3", "S3", "http://127.0.0.1:9"),
    ]
    # The catalog file, its write-ahead log and shared memory: the secret is in none of them.
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("catalog.db*"))
    assert b"sekrit" not in stored
    assert b"AKIDEXAMPLE" not in stored
    entry = lake.catalog.get(ConnectionEntry, "my_s3")
    assert unseal(entry.access_key, tmp_path) == "sekrit"  # sealed, not lost


# --- S3: a real (moto) S3 endpoint over HTTP ---


@pytest.mark.parametrize("master", ["local[2]", "spark://127.0.0.1:7077"])
def test_copy_from_an_s3_volume(
    spark: SparkSession,
    tmp_path: Path,
    s3_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    master: str,
) -> None:
    """A local master reads the objects through local copies; a cluster's (here only named: this
    session's Spark does the reading) through S3A in place, with the bucket's settings on the
    read, so that its executors reach them and nothing is copied to the driver."""
    settings = LakeSettings(lake_home=tmp_path, spark_master=master)
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    # S3 dates objects at upload, so the settle window cannot be dodged by back-dating them.
    monkeypatch.setattr(loading, "SETTLE_SECONDS", 0.0)
    s3, bucket = new_bucket(s3_endpoint)
    lake.sql(
        f"CREATE STORAGE CONNECTION my_s3 TYPE S3 ENDPOINT = '{s3_endpoint}' "
        f"ACCESS_ID = '{ACCESS_ID}' ACCESS_KEY = '{ACCESS_KEY}' REGION = '{REGION}'"
    )
    with pytest.raises(StatementError, match=f"LOCATION 's3://{bucket}/' is a bucket root"):
        lake.sql(f"CREATE EXTERNAL VOLUME r LOCATION 's3://{bucket}/' USING CONNECTION my_s3")
    lake.sql(
        f"CREATE EXTERNAL VOLUME v LOCATION 's3://{bucket}/incoming/' USING CONNECTION my_s3 "
        "DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE;"
        "CREATE TABLE t (id BIGINT, name STRING)"
    )
    s3.upload_fileobj(io.BytesIO(b"1,a\n2,b\n"), bucket, "incoming/a.csv")
    s3.upload_fileobj(io.BytesIO(b"3,c\n"), bucket, "incoming/day=2/b c.csv")
    s3.upload_fileobj(io.BytesIO(b"4,d\nx,e\n"), bucket, "incoming/bad.csv")
    s3.put_object(Bucket=bucket, Key="elsewhere/c.csv", Body=b"9,z\n")  # outside the volume

    assert message(lake, f"{COPY} PURGE = TRUE") == (
        "COPY: 2 files loaded (3 rows), 1 failed, 2 purged; t is at version 1"
    )
    assert rows(lake, "SELECT * FROM t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    assert sorted((r.file_path, r.status) for r in load_history(lake.catalog, "t")) == [
        (f"s3://{bucket}/incoming/a.csv", "LOADED"),
        (f"s3://{bucket}/incoming/bad.csv", "LOAD_FAILED"),
        (f"s3://{bucket}/incoming/day=2/b c.csv", "LOADED"),
    ]
    left = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    assert [item["Key"] for item in left] == ["elsewhere/c.csv", "incoming/bad.csv"]
    assert message(lake, COPY) == NO_CHANGE
    assert rows(lake, "SELECT count(*) FROM VOLUME v USING CSV FILES ('bad.csv')") == [(2,)]
    copies = lake.settings.lake_home / "cache" / "volumes" / "v"
    assert copies.exists() == (master == "local[2]")


# --- bugs found while writing these tests ---


def test_file_names_with_spaces_are_loaded_and_failed_like_any_other(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "day one.csv", "1,a\n2,b\n")
    put(volume, "day two.csv", "3,c\nx,d\n")
    lake.sql(f"{COPY} PURGE = TRUE")
    records = records_by_name(lake, "t")
    assert (records["day%20one.csv"].status, records["day%20one.csv"].rows_loaded) == ("LOADED", 2)
    assert records["day%20two.csv"].status == "LOAD_FAILED"
    assert files(volume) == ["day two.csv"]
    assert_catalog_matches(lake, "t", version=1, count=2)


def test_purge_keeps_a_reuploaded_file_that_was_not_loaded(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "a.csv", "1,a\n", seconds=20)
    lake.sql(COPY)  # loaded, not purged
    put(volume, "a.csv", "2,b\n3,c\n")  # the same name, new rows
    assert message(lake, f"{COPY} PURGE = TRUE").startswith("COPY: 0 files loaded")
    assert files(volume) == ["a.csv"]  # its rows are not committed: it must not be deleted


def test_a_corrupt_parquet_file_fails_alone(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    lake.sql(
        "COPY INTO VOLUME v FROM (SELECT CAST(1 AS BIGINT) AS id, 'a' AS name "
        "UNION ALL SELECT 2, 'b') FILE_FORMAT = (TYPE = PARQUET)"
    )
    age(volume / "part00001.parquet")
    put(volume, "part00002.parquet", b"PAR1 this upload was cut short")
    assert message(lake, "COPY INTO t FROM VOLUME v USING PARQUET").startswith(
        "COPY: 1 files loaded (2 rows), 1 failed"
    )
    assert records_by_name(lake, "t")["part00002.parquet"].status == "LOAD_FAILED"


def test_copy_into_a_table_with_a_varchar_column(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE codes (id INT, code VARCHAR(3))")
    put(volume, "codes.csv", "1,abc\n")
    assert message(lake, "COPY INTO codes FROM VOLUME v USING CSV").startswith(
        "COPY: 1 files loaded (1 rows)"
    )


def test_an_integer_overflow_names_its_column(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id INT, name STRING)")
    put(volume, "big.csv", "99999999999,a\n")
    lake.sql(COPY)
    assert records_by_name(lake, "t")["big.csv"].first_error_message == (
        "column id: '99999999999' is not a valid INT"
    )


# --- file names reach Spark literally, and a file Spark cannot read fails alone ---

GLOB_NAMES = ["x1.csv", "x*.csv", "x[1].csv", "x?.csv", "x{1}.csv"]


def test_file_names_with_glob_characters_are_each_read_once(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    for number, name in enumerate(GLOB_NAMES):
        put(volume, name, f"{number},{name}\n")
    expected = sorted(enumerate(GLOB_NAMES))
    assert (
        message(lake, COPY)
        == "COPY: 5 files loaded (5 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == expected
    assert (
        sorted((int(i), name) for i, name in rows(lake, "SELECT * FROM VOLUME v USING CSV"))
        == expected
    )
    assert message(lake, COPY) == NO_CHANGE


def test_file_names_with_a_colon_load(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "good.csv", "1,a\n")
    put(volume, "a:b.csv", "2,b\n")
    put(volume, "a:b[1].csv", "3,c\n")  # Hadoop's glob cannot take this one: it is read alone
    assert (
        message(lake, COPY)
        == "COPY: 3 files loaded (3 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,)]
    assert {r.status for r in load_history(lake.catalog, "t")} == {"LOADED"}


def test_a_parquet_file_whose_types_do_not_fit_fails_alone(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id INT, name STRING)")
    tables = {
        "good.parquet": pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}),
        "string_id.parquet": pa.table({"id": ["x"], "name": ["b"]}),
        "struct_id.parquet": pa.table({"id": [{"a": 3}], "name": ["c"]}),
    }
    for name, table in tables.items():
        pq.write_table(table, volume / name)
        age(volume / name)
    copy = "COPY INTO t FROM VOLUME v USING PARQUET"
    assert message(lake, copy) == (
        "COPY: 1 files loaded (1 rows), 2 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name FROM t") == [(1, "a")]
    records = records_by_name(lake, "t")
    assert records["good.parquet"].status == "LOADED"
    for name in ("string_id.parquet", "struct_id.parquet"):
        error = records[name].first_error_message or ""
        assert records[name].status == "LOAD_FAILED"
        assert "\n" not in error
        assert "at org." not in error
    assert "CAST_INVALID_INPUT" in (records["string_id.parquet"].first_error_message or "")
    assert "DATATYPE_MISMATCH" in (records["struct_id.parquet"].first_error_message or "")
    assert message(lake, copy) == NO_CHANGE  # an unchanged failed file is not tried again
