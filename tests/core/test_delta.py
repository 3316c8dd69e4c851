"""The transaction-log readers (history, table properties) against Delta's own DESCRIBE HISTORY
and SHOW TBLPROPERTIES, and session settings scoped to a block."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.delta import (
    commits_from,
    delta_ref,
    history,
    local_table,
    log_actions,
    log_versions,
    session_conf,
    table_properties,
)
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, new_bucket


def test_the_log_reader_shows_what_describe_history_shows(
    spark: SparkSession, tmp_path: Path
) -> None:
    location = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE {delta_ref(location)} (id BIGINT, v STRING) USING delta")
    rows = spark.createDataFrame([(1, "a"), (2, "b"), (3, None)], "id BIGINT, v STRING")
    rows.write.format("delta").mode("append").option("userMetadata", '{"tag": 1}').save(location)
    spark.sql(f"UPDATE {delta_ref(location)} SET v = 'c' WHERE id = 3")
    spark.sql(f"DELETE FROM {delta_ref(location)} WHERE id = 1")

    from_log = history(spark, location)
    described = spark.sql(f"DESCRIBE HISTORY {delta_ref(location)}").collect()

    assert [c.version for c in from_log] == [3, 2, 1, 0]
    assert history(spark, f"file://{location}") == from_log
    for mine, theirs in zip(from_log, described, strict=True):
        assert (mine.version, mine.operation, mine.operation_metrics, mine.user_metadata) == (
            theirs["version"],
            theirs["operation"],
            theirs["operationMetrics"],
            theirs["userMetadata"],
        )
        assert abs(mine.timestamp - theirs["timestamp"]) < timedelta(seconds=2)
    assert from_log[2].user_metadata == '{"tag": 1}'
    assert history(spark, location, 2) == from_log[:2]


def test_the_log_reader_shows_the_properties_show_tblproperties_shows(
    spark: SparkSession, tmp_path: Path
) -> None:
    location = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE {delta_ref(location)} (id BIGINT) USING delta")
    spark.sql(
        f"ALTER TABLE {delta_ref(location)} SET TBLPROPERTIES "
        "('delta.enableRowTracking' = 'true', 'team' = 'data')"
    )
    latest = history(spark, location)[0].version

    def shown(version: int) -> dict[str, str]:
        rows = spark.sql(f"SHOW TBLPROPERTIES {delta_ref(f'{location}@v{version}')}").collect()
        protocol = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.feature.")
        return {row["key"]: row["value"] for row in rows if not row["key"].startswith(protocol)}

    assert table_properties(spark, location) == shown(latest)
    assert table_properties(spark, location, 0) == shown(0) == {}
    assert table_properties(spark, location)["delta.rowTracking.materializedRowIdColumnName"]
    # Without the checksum file, Spark answers (with Delta's protocol keys besides).
    (tmp_path / "t" / "_delta_log" / f"{latest:020d}.crc").unlink()
    assert table_properties(spark, location).items() >= shown(latest).items()


def test_session_settings_are_put_back_as_they_were_even_after_an_error(
    spark: SparkSession,
) -> None:
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    unset = "spark.lake.test.unset"
    seen: list[str | None] = []

    def fail_inside() -> None:
        with session_conf(spark, {"spark.sql.shuffle.partitions": "1", unset: "x"}):
            seen.extend([spark.conf.get("spark.sql.shuffle.partitions"), spark.conf.get(unset)])
            raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fail_inside()

    assert seen == ["1", "x"]
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert spark.conf.get(unset, None) is None


def test_a_log_in_s3_reads_as_the_same_log_on_disk(
    spark: SparkSession, tmp_path: Path, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE {delta_ref(location)} (id BIGINT, v STRING) USING delta")
    spark.sql(f"INSERT INTO {delta_ref(location)} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"ALTER TABLE {delta_ref(location)} SET TBLPROPERTIES ('team' = 'data')")
    spark.sql(f"UPDATE {delta_ref(location)} SET v = 'c' WHERE id = 2")
    s3, bucket = new_bucket(s3_endpoint)
    for file in sorted((tmp_path / "t" / "_delta_log").iterdir()):
        if file.is_file():
            s3.upload_file(str(file), bucket, f"lake/t/_delta_log/{file.name}")
    for name, value in (
        ("AWS_ENDPOINT_URL", s3_endpoint),
        ("AWS_ACCESS_KEY_ID", ACCESS_ID),
        ("AWS_SECRET_ACCESS_KEY", ACCESS_KEY),
        ("AWS_REGION", REGION),
    ):
        monkeypatch.setenv(name, value)
    remote = f"s3a://{bucket}/lake/t/"

    assert log_versions(remote) == log_versions(location) == [3, 2, 1, 0]
    assert history(None, remote) == history(None, location)
    assert history(None, remote, 1) == history(None, location)[:1]
    assert list(commits_from(None, remote, 2)) == list(commits_from(None, location, 2))
    assert log_actions(remote, 3) == log_actions(location, 3)
    assert log_actions(remote, 9) is None
    assert table_properties(spark, remote) == table_properties(spark, location) == {"team": "data"}
    assert local_table(remote) is None
    assert history(None, f"s3a://{bucket}/nothing") == []
