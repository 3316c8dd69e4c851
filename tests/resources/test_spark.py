"""The Spark configuration a lake session starts with, and the driver it starts."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from resources.jvm import LOCAL_FILE_CONTEXT, LOCAL_FILE_SYSTEM, S3_LOG_STORE
from resources.spark import local_cores, spark_conf


def test_a_local_master_names_its_cores_and_a_cluster_does_not() -> None:
    assert local_cores("local") == 1
    assert local_cores("local[3]") == 3
    assert local_cores("local[2, 4]") == 2
    assert local_cores("local[*]") == os.cpu_count()
    assert local_cores("spark://host:7077") is None
    assert local_cores("local-cluster[2,1,1024]") is None


def test_the_cores_are_readable_as_default_parallelism_unless_overridden(tmp_path: Path) -> None:
    """Incremental refreshes read it to plan one shuffle partition per core; file listings
    (VACUUM's) run one task per core."""
    local = spark_conf(LakeSettings(lake_home=tmp_path, spark_master="local[3]"))
    assert local["spark.default.parallelism"] == "3"
    assert local["spark.sql.sources.parallelPartitionDiscovery.parallelism"] == "3"
    cluster = spark_conf(LakeSettings(lake_home=tmp_path, spark_master="spark://host:7077"))
    assert "spark.default.parallelism" not in cluster
    assert "spark.sql.sources.parallelPartitionDiscovery.parallelism" not in cluster
    chosen = LakeSettings(
        lake_home=tmp_path, spark_master="local[3]", spark_conf={"spark.default.parallelism": "8"}
    )
    assert spark_conf(chosen)["spark.default.parallelism"] == "8"


def test_jvm_options_reach_the_driver_and_executors_in_utc_beside_the_log_settings(
    tmp_path: Path,
) -> None:
    """Every JVM runs in UTC, and the options given come after: a zone given there wins."""
    environ = {"LAKE_JVM_OPTIONS": "-XX:TieredStopAtLevel=1 '-Dlake.note=a b'"}
    conf = spark_conf(LakeSettings(lake_home=tmp_path), environ)
    driver = conf["spark.driver.extraJavaOptions"]
    assert driver.startswith("-Dlog4j2.configurationFile=")
    assert driver.endswith(
        f"-Dlake.log.dir={tmp_path / 'logs'} -Duser.timezone=UTC -XX:TieredStopAtLevel=1 "
        "'-Dlake.note=a b'"
    )
    assert conf["spark.executor.extraJavaOptions"] == (
        "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 '-Dlake.note=a b'"
    )
    without = spark_conf(LakeSettings(lake_home=tmp_path), {})
    assert without["spark.executor.extraJavaOptions"] == "-Duser.timezone=UTC"


def test_the_tests_driver_runs_in_utc_with_the_jvm_options(spark: SparkSession) -> None:
    """The suite's own driver got LAKE_JVM_OPTIONS (tests/conftest.py sets it) at launch."""
    jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert {"-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=512m"} <= set(arguments)
    assert "-Duser.timezone=UTC" in arguments
    assert jvm.java.util.TimeZone.getDefault().getID() == "UTC"


def test_creating_a_table_runs_no_spark_job(spark: SparkSession, lake: LakeSession) -> None:
    """Delta keeps no file list in the new table's checksum file, which took a job to build."""
    context = spark.sparkContext
    context.setJobGroup("create-table", "")
    try:
        lake.sql("CREATE TABLE t (id BIGINT)")
        assert context.statusTracker().getJobIdsForGroup("create-table") == []
    finally:
        context._jsc.clearJobGroup()  # type: ignore[union-attr]


def test_a_local_master_writes_local_files_without_starting_processes(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Hadoop's local filesystem, and FileContext's (Delta commits through it), are ours: a
    permission set and a path's link status come from Java, not from `chmod` and `readlink`, and
    say what Hadoop's own would (which sees a link only by a path without a scheme)."""
    jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    hadoop = jvm.org.apache.hadoop.fs
    fs = hadoop.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert fs.getClass().getName() == LOCAL_FILE_SYSTEM
    context = hadoop.FileContext.getLocalFSFileContext(conf)
    assert context.getDefaultFileSystem().getClass().getName() == LOCAL_FILE_CONTEXT

    written = tmp_path / "written"
    stream = fs.create(hadoop.Path(f"file://{written}"))
    stream.close()
    fs.setPermission(hadoop.Path(f"file://{written}"), hadoop.permission.FsPermission("640"))
    assert written.stat().st_mode & 0o777 == 0o640
    link = tmp_path / "link"
    link.symlink_to(written)
    hadoops = hadoop.RawLocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)
    for path in (hadoop.Path(f"file://{link}"), hadoop.Path(str(link)), hadoop.Path(str(written))):
        ours = context.getFileLinkStatus(path)
        theirs = hadoops.getFileLinkStatus(path)
        assert (ours.isSymlink(), ours.getLen()) == (theirs.isSymlink(), theirs.getLen())
        assert ours.isSymlink() == (path.toString() == str(link))
    cluster = spark_conf(LakeSettings(lake_home=tmp_path, spark_master="spark://host:7077"))
    assert "spark.hadoop.fs.file.impl" not in cluster


def test_a_local_warehouse_needs_no_s3a_settings(tmp_path: Path) -> None:
    conf = spark_conf(LakeSettings(lake_home=tmp_path), {"AWS_ACCESS_KEY_ID": "id"})
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    assert not [key for key in conf if "s3a" in key]


def test_an_s3a_warehouse_reaches_its_endpoint_with_the_environments_credentials(
    tmp_path: Path,
) -> None:
    environ = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "an-id",
        "AWS_SECRET_ACCESS_KEY": "a-secret",
        "AWS_REGION": "eu-west-1",
    }
    settings = LakeSettings(lake_home=tmp_path, warehouse_url="s3a://bucket/lake/")
    conf = spark_conf(settings, environ)
    assert conf["spark.sql.warehouse.dir"] == "s3a://bucket/lake"
    assert conf["spark.delta.logStore.s3a.impl"] == S3_LOG_STORE
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    # S3A's default chain, which reads the AWS variables too: a worker with an instance role and
    # no variables is not refused.
    assert "spark.hadoop.fs.s3a.aws.credentials.provider" not in conf
    # The credentials stay in the environment: no conf value holds them.
    assert not {"an-id", "a-secret"} & set(conf.values())


def test_aws_s3_itself_keeps_its_own_endpoint_and_https(tmp_path: Path) -> None:
    settings = LakeSettings(lake_home=tmp_path, warehouse_url="s3a://bucket/lake")
    conf = spark_conf(settings, {"AWS_REGION": "us-east-1"})
    assert "spark.hadoop.fs.s3a.endpoint" not in conf
    assert "spark.hadoop.fs.s3a.connection.ssl.enabled" not in conf
    assert "spark.hadoop.fs.s3a.aws.credentials.provider" not in conf  # S3A's default chain
