"""Volumes end to end: exports read and loaded back, a LIST_PURGE pipe, connections, S3."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes import planning
from lake_assets.pipes.engine import polling_text
from lake_assets.pipes.load_records import load_history
from lake_assets.session import LakeSession
from lake_assets.sql.grammar import StatementError
from resources.secrets import unseal
from tests.ingest_helpers import (
    SALES_COLUMNS,
    SALES_ROWS,
    SALES_SOURCE,
    age_all,
    files,
    local_volume,
    message,
    properties,
    put,
    rows,
)
from tests.pipes.loading_helpers import COPY, NO_CHANGE
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, new_bucket


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
    monkeypatch.setattr(planning, "SETTLE_SECONDS", 0.0)
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
