"""The Spark session with Delta Lake, as a lazy Dagster resource: no JVM until first use.

With LAKE_SPARK_REMOTE set, the session is a Spark Connect client of a warm server
(`lake spark-server`) instead: no JVM in this process at all."""

from __future__ import annotations

import logging
import os
import shlex
import socket
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import cast
from urllib.parse import urlparse

from dagster import InitResourceContext
from dagster_pyspark import LazyPySparkResource
from dagster_pyspark.resources import spark_session_from_config
from pyspark.sql import SparkSession

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LOCAL_MASTER, LakeSettings
from resources.jvm import (
    LOCAL_FILE_CONTEXT,
    LOCAL_FILE_SYSTEM,
    LOCAL_FILE_SYSTEM_JAR,
    S3_LOG_STORE,
    S3_LOG_STORE_JAR,
    SPARK_JAR_SETS,
    check_java,
    compiled_jar,
    extra_jvm_options,
    fetch_jars,
)
from resources.s3a import endpoint_settings

_LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
# Every Spark JVM runs in UTC, as SQL does (spark.sql.session.timeZone), whatever the host's zone:
# on a JVM in another zone Delta distrusts the file lists it can keep in checksum files (off
# below, unless LAKE_SPARK_CONF turns them on) and replays the table's whole log after every
# commit to check them: 42 Spark jobs instead of 34 for bench/statement_jobs.py's round of nine
# statements on a host in America/New_York with the lists kept.
_JVM_ZONE = "-Duser.timezone=UTC"
DEFAULT_CONNECT_PORT = 15002


def spark_conf(settings: LakeSettings, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark configuration for Delta on a small machine; LAKE_SPARK_CONF entries win."""
    environ = os.environ if environ is None else environ
    jvm_options = shlex.join(extra_jvm_options(environ))
    conf = {
        "spark.master": settings.spark_master,
        "spark.app.name": "lake",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
        # Net changes by row id (`… CHANGES FROM VERSION a … WITH ('deduplicationMode' =
        # 'netChanges')`), which STANDARD streams read.
        "spark.databricks.delta.changelogV2.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        # No copy of a small table's file list in each checksum file: only Delta's check of the
        # list and the next checksum file read it, and building the first one ran a Spark job for
        # each new table (CREATE TABLE 0.13 s with it, 0.04 s without; bench/statement_jobs.py).
        "spark.databricks.delta.allFilesInCrc.enabled": "false",
        "spark.driver.memory": "2g",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": settings.warehouse_location,
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j2.configurationFile={_LOG4J_CONFIG} -Dlake.log.dir={settings.log_dir} "
            f"{_JVM_ZONE} {jvm_options}"
        ).strip(),
        "spark.executor.extraJavaOptions": f"{_JVM_ZONE} {jvm_options}".strip(),
    }
    cores = local_cores(settings.spark_master)
    if cores is not None:
        # Spark's own default for a local master, set so that SQL code can read it: incremental
        # refreshes plan one shuffle partition per core.
        conf["spark.default.parallelism"] = str(cores)
        # Listing files in parallel (VACUUM, partition discovery) otherwise runs up to 10,000
        # tasks: a VACUUM of a two-file table took a minute on two cores, 5 s with one per core.
        conf["spark.sql.sources.parallelPartitionDiscovery.parallelism"] = str(cores)
        # Nothing outside this machine talks to a local driver: its ports stay on loopback.
        conf["spark.driver.bindAddress"] = conf["spark.driver.host"] = "127.0.0.1"
        # Files written without a `chmod` process each (resources/jvm.py): ~4 ms per file.
        conf["spark.hadoop.fs.file.impl"] = LOCAL_FILE_SYSTEM
        conf["spark.hadoop.fs.AbstractFileSystem.file.impl"] = LOCAL_FILE_CONTEXT
    if settings.warehouse_location.startswith("s3a://"):
        conf.update(s3a_conf(environ))
    conf.update(settings.spark_conf)
    return conf


def s3a_conf(environ: Mapping[str, str]) -> dict[str, str]:
    """S3A settings for an `s3a://` warehouse, from the standard AWS variables, and the Delta log
    store that makes it safe for writers in several processes (commits by conditional PUT).

    No credentials provider is named: S3A's default chain (keys in `fs.s3a.*`, the AWS_*
    variables, then an instance role or container credentials) lets each machine use what it
    has, where naming the environment's provider would fail workers that use a role. No secret
    is written into a conf value here."""
    conf = {"spark.delta.logStore.s3a.impl": S3_LOG_STORE}
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    settings = endpoint_settings(endpoint, region).items()
    conf.update({f"spark.hadoop.fs.s3a.{key}": value for key, value in settings})
    return conf


def local_cores(master: str) -> int | None:
    """The task slots of a local master (`local`, `local[N]`, `local[*]`); None for a cluster."""
    match = LOCAL_MASTER.fullmatch(master.strip())
    if match is None:
        return None
    slots = match.group(1) or "1"
    return (os.cpu_count() or 1) if slots == "*" else int(slots)


def with_spark_jars(config: dict[str, str], jars_dir: Path) -> dict[str, str]:
    """`config` with the Spark jar sets' cached jars and our S3 log store added to spark.jars, and
    our local filesystem on the driver's classpath (fetched and compiled on first use)."""
    jars = [str(jar) for jar_set in SPARK_JAR_SETS for jar in fetch_jars(jar_set, jars_dir)]
    jars.append(str(compiled_jar(S3_LOG_STORE_JAR, jars_dir)))
    extra = [config["spark.jars"]] if config.get("spark.jars") else []
    classpath = [str(compiled_jar(LOCAL_FILE_SYSTEM_JAR, jars_dir))]
    if config.get("spark.driver.extraClassPath"):
        classpath.append(config["spark.driver.extraClassPath"])
    return {
        **config,
        "spark.jars": ",".join([*extra, *jars]),
        "spark.driver.extraClassPath": os.pathsep.join(classpath),
    }


def _silence_duplicate_error_logs() -> None:
    """PySpark logs every SQL error it raises; we report the raised error ourselves."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


@contextmanager
def _console_to(path: str | None) -> Iterator[None]:
    """Point this process's stdout/stderr at `path` while the JVM is spawned (it inherits them)."""
    if path is None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def remote_address(url: str) -> tuple[str, int]:
    """Host and port of a Spark Connect URL, sc://host[:port][/;params] (port 15002 by default)."""
    parsed = urlparse(url)
    if parsed.scheme != "sc" or not parsed.hostname:
        raise LakeError(
            f"LAKE_SPARK_REMOTE={url!r} is not a Spark Connect URL",
            "write it as sc://host:port, for example sc://127.0.0.1:15002",
        )
    return parsed.hostname, parsed.port or DEFAULT_CONNECT_PORT


def connect_session(url: str) -> SparkSession:
    """A Spark Connect session of its own (per-session confs stay in it), or a clear error."""
    host, port = remote_address(url)
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as error:
        raise LakeError(
            f"no Spark Connect server answers at {url} ({error.strerror or error})",
            "start one with `lake spark-server` (or `make dev`), or unset LAKE_SPARK_REMOTE "
            "to run Spark in this process",
        ) from None
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # pyspark.sql.functions build Connect expressions only in this mode (pyspark's own remote
    # builder sets it too): a process runs Spark either locally or through Connect.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"

    # The Connect builder itself: pyspark's generic builder refuses a remote session in a process
    # that already has a classic one, and switches later classic builders to Connect mode.
    return cast(SparkSession, ConnectSession.builder.remote(url).create())


class DeltaSparkResource(LazyPySparkResource):
    """dagster-pyspark's lazy session, with Delta's and Kafka's jars and Java checked first."""

    jars_dir: str
    console_log: str | None = None
    remote: str | None = None

    @classmethod
    def from_settings(
        cls, settings: LakeSettings, console_log: str | None = None
    ) -> DeltaSparkResource:
        return cls(
            spark_config=spark_conf(settings),
            jars_dir=str(settings.jars_dir),
            console_log=console_log,
            remote=settings.spark_remote,
        )

    @property
    def spark_session(self) -> SparkSession:
        if self._spark_session is None and self.remote:
            self._spark_session = connect_session(self.remote)
            _silence_duplicate_error_logs()
        if self._spark_session is None:
            check_java()
            config = with_spark_jars(self.spark_config, Path(self.jars_dir))
            with _console_to(self.console_log):
                self._spark_session = spark_session_from_config(config)
            _silence_duplicate_error_logs()
        return self._spark_session

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        """A run's Connect session is released on the server; a local JVM ends with its process."""
        self.release()

    def release(self) -> None:
        """Stop a Connect session (the Python API closes one this way, outside any run)."""
        if self.remote and self._spark_session is not None:
            self._spark_session.stop()
            self._spark_session = None
