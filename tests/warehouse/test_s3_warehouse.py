"""A warehouse in object storage: tables under `s3a://` on moto's S3 server, spoken to over HTTP
through Hadoop's S3A, by this test session's Spark and by writers in processes of their own."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from lake_assets.sql.grammar import StatementError
from resources.s3a import bucket_settings
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, new_bucket, s3_client
from tests.warehouse.test_append_races import run_writers, writer_env


@pytest.fixture
def bucket(spark: SparkSession, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket that the test session's Spark reaches through S3A (per-bucket settings),
    and this process through the standard AWS variables (Delta logs read without Spark)."""
    _, name = new_bucket(s3_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", ACCESS_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    for key, value in bucket_settings(name, s3_endpoint, REGION, ACCESS_ID, ACCESS_KEY).items():
        spark.conf.set(key, value)
    return name


@pytest.fixture
def s3_lake(spark: SparkSession, tmp_path: Path, bucket: str) -> LakeSession:
    settings = LakeSettings(lake_home=tmp_path, warehouse_url=f"s3a://{bucket}/lake/")
    return LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)


def log_versions(s3_endpoint: str, bucket: str, location: str) -> list[int]:
    """The commit versions in a table's Delta log, as the S3 server lists them."""
    s3 = s3_client(s3_endpoint)
    prefix = location.removeprefix(f"s3a://{bucket}/") + "/_delta_log/"
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    return sorted(int(Path(key).stem) for key in keys if key.endswith(".json"))


def test_tables_live_in_the_bucket_and_take_every_statement(
    s3_lake: LakeSession, s3_endpoint: str, bucket: str
) -> None:
    s3_lake.sql(
        "CREATE TABLE t (id BIGINT, name STRING);"
        "INSERT INTO t VALUES (1, 'a'), (2, 'b');"
        "UPDATE t SET name = 'c' WHERE id = 2"
    )

    location = s3_lake.catalog.relation("t").location
    assert location.startswith(f"s3a://{bucket}/lake/t-")
    [rows] = s3_lake.sql("SELECT id, name FROM t ORDER BY id")
    assert [tuple(row) for row in rows.rows] == [(1, "a"), (2, "c")]
    [history] = s3_lake.sql("DESC HISTORY t")
    operation = history.columns.index("operation")
    operations = [row[operation] for row in history.rows]
    assert operations[:2] == ["UPDATE", "WRITE"]
    assert log_versions(s3_endpoint, bucket, location) == [0, 1, 2]


def test_a_stream_reads_an_s3_table_and_drop_deletes_its_objects(
    s3_lake: LakeSession, lake: LakeSession, s3_endpoint: str, bucket: str
) -> None:
    changes = []
    for session, t, s in ((s3_lake, "t", "s"), (lake, "local_t", "local_s")):
        session.sql(f"CREATE TABLE {t} (id BIGINT, name STRING); INSERT INTO {t} VALUES (1, 'a')")
        session.sql(f"CREATE TABLE STREAM {s} ON TABLE {t}")
        session.sql(f"INSERT INTO {t} VALUES (2, 'b'); UPDATE {t} SET name = 'z' WHERE id = 1")
        [result] = session.sql(f"SELECT id, name, __change_type FROM {s} ORDER BY id, name")
        changes.append([tuple(row) for row in result.rows])

    assert changes[0] == changes[1]
    assert (2, "b", "INSERT") in changes[0]
    assert {row[:2] for row in changes[0]} >= {(1, "z"), (2, "b")}
    location = s3_lake.catalog.relation("t").location
    s3_lake.sql("DROP STREAM s; DROP TABLE t")
    assert log_versions(s3_endpoint, bucket, location) == []
    s3 = s3_client(s3_endpoint)
    prefix = location.removeprefix(f"s3a://{bucket}/") + "/"
    assert s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("KeyCount") == 0


TIMES = 10


def test_two_processes_append_to_one_table_and_no_commit_is_lost(
    s3_lake: LakeSession, s3_endpoint: str, bucket: str, tmp_path: Path
) -> None:
    """Each process its own Spark session, configured from LAKE_WAREHOUSE and the AWS variables:
    where both write version N, S3's conditional PUT lets one win and Delta moves the other on."""
    s3_lake.sql("CREATE TABLE t (n BIGINT, writer STRING)")
    env = writer_env(
        tmp_path,
        LAKE_WAREHOUSE=f"s3a://{bucket}/lake/",
        AWS_ENDPOINT_URL=s3_endpoint,
        AWS_ACCESS_KEY_ID=ACCESS_ID,
        AWS_SECRET_ACCESS_KEY=ACCESS_KEY,
        AWS_REGION=REGION,
    )

    run_writers(tmp_path, "INSERT INTO t VALUES ({number}, '{writer}')", env, TIMES)

    [rows] = s3_lake.sql("SELECT writer, count(*) AS n FROM t GROUP BY writer ORDER BY writer")
    assert [tuple(row) for row in rows.rows] == [("a", TIMES), ("b", TIMES)]
    location = s3_lake.catalog.relation("t").location
    assert log_versions(s3_endpoint, bucket, location) == list(range(2 * TIMES + 1))


@pytest.mark.parametrize(
    ("provider", "cause"),
    [
        (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "NoAwsCredentialsException: SimpleAWSCredentialsProvider: No AWS credentials",
        ),
        (
            "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
            "SdkClientException: Unable to load credentials from system settings",
        ),
    ],
    ids=["keys", "environment"],
)
def test_a_spark_without_credentials_for_the_warehouse_says_so_in_one_line(
    spark: SparkSession, s3_endpoint: str, tmp_path: Path, provider: str, cause: str
) -> None:
    """Executors started where no AWS variables are exported fail this way; the line names the
    cause, not Py4J's "An error occurred while calling o82.save". The provider has nothing to
    give: no keys in the settings, no AWS variables in this JVM's environment."""
    _, name = new_bucket(s3_endpoint)
    for key, value in bucket_settings(name, s3_endpoint, REGION, None, None).items():
        spark.conf.set(key, value)
    spark.conf.set(f"fs.s3a.bucket.{name}.aws.credentials.provider", provider)
    settings = LakeSettings(lake_home=tmp_path, warehouse_url=f"s3a://{name}/lake/")
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    with pytest.raises(StatementError) as raised:
        lake.sql("CREATE TABLE t (id BIGINT)")
    text = str(raised.value)
    assert cause in text
    assert "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in text
    assert len(text.splitlines()) == 1
