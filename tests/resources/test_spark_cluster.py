"""LAKE_SPARK_MASTER=spark://…: a real standalone master and worker from the pyspark package, the
test session's. Drivers run in subprocesses (`lake sql`, `lake spark-server`): this process keeps
its one local session."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from resources.spark_cluster import Cluster, master_status
from resources.spark_server import LOOPBACK, free_port, listening, server_url, spawn_server, stop
from tests.s3_server import aws_env, new_bucket

# Each test starts a process of its own: not a unit test (see tests/conftest.py).
pytestmark = pytest.mark.slow

DEADLINE_SECONDS = 120.0


@pytest.fixture
def cluster(spark_cluster: Cluster) -> Cluster:
    """The test session's cluster (tests/conftest.py)."""
    return spark_cluster


def _workers_under(folder: Path) -> list[str]:
    """Command lines of live JVMs naming `folder` (a worker names its work dir)."""
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in listing.stdout.splitlines() if str(folder) in line and "java" in line]


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A driver's environment: its own LAKE_HOME, and its ports on loopback like the cluster's."""
    env = {**os.environ, "LAKE_HOME": str(home), "SPARK_LOCAL_IP": LOOPBACK}
    env.pop("LAKE_SPARK_REMOTE", None)
    env.pop("DAGSTER_HOME", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return {**env, **extra}


def _lake_sql(env: dict[str, str], script: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "lake_assets.cli", "sql", "-e", script],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _app(cluster: Cluster, name: str, state: str, known: frozenset[str] = frozenset()) -> Any:
    """The one application called `name`, not in `known`, in the master's active or completed
    list (a driver that just exited is listed as completed a moment later)."""
    key = "activeapps" if state == "active" else "completedapps"
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        apps = [a for a in cluster.state()[key] if a["name"] == name and a["id"] not in known]
        if apps or time.monotonic() > deadline:
            (app,) = apps
            return app
        time.sleep(0.5)


def _app_ids(cluster: Cluster) -> frozenset[str]:
    state = cluster.state()
    return frozenset(app["id"] for app in state["activeapps"] + state["completedapps"])


def _finished_tasks(cluster: Cluster, app_id: str) -> int:
    """Tasks the worker's executors for `app_id` finished, from their own logs (the master
    replaces an executor that is lost, as one can be on a machine this busy)."""
    logs = (cluster.work_dir / app_id).glob("*/stderr")
    return sum(log.read_text(errors="replace").count("Executor: Finished task") for log in logs)


SETUP = """
CREATE TABLE t (id BIGINT, name STRING, amount DECIMAL(10,2));
INSERT INTO t VALUES (1, 'a', 1.50), (2, 'b', 2.00), (3, 'c', 3.25);
UPDATE t SET amount = amount * 2 WHERE id >= 2;
"""
SCRIPT = SETUP + "SELECT id, name, amount FROM t ORDER BY id"
RESULT = """\
INSERT: 3 inserted, 0 updated, 0 deleted; t is at version 1 with 3 rows
UPDATE: 0 inserted, 2 updated, 0 deleted; t is at version 2 with 3 rows
id | name | amount
---+------+-------
1  | a    | 1.50
2  | b    | 4.00
3  | c    | 6.50
(3 rows)
"""


def test_lake_sql_runs_its_statements_on_the_worker(cluster: Cluster, tmp_path: Path) -> None:
    before = _app_ids(cluster)
    output = _lake_sql(_env(tmp_path, LAKE_SPARK_MASTER=cluster.master_url), SCRIPT)
    assert output.endswith(RESULT), output
    app = _app(cluster, "lake", "completed", before)
    assert (app["state"], app["cores"]) == ("FINISHED", 1)
    # The executor fetched Delta's jars from the driver (spark.jars) and ran the tasks.
    executor_dir = next((cluster.work_dir / app["id"]).iterdir())
    assert any(jar.name.startswith("delta-spark_") for jar in executor_dir.glob("*.jar"))
    assert _finished_tasks(cluster, app["id"]) > 0


def test_a_connect_server_on_the_cluster_runs_statements_there(
    cluster: Cluster, tmp_path: Path
) -> None:
    port = free_port()
    env = _env(tmp_path, LAKE_SPARK_MASTER=cluster.master_url)
    with (tmp_path / "server.log").open("wb") as log:
        server = spawn_server(port, env, log)
    try:
        app = _app(cluster, "lake-connect-server", "active")
        client = _env(tmp_path, LAKE_SPARK_REMOTE=server_url(port))
        assert _lake_sql(client, SCRIPT).endswith(RESULT)
        assert _finished_tasks(cluster, app["id"]) > 0
    finally:
        stop(server)
    assert server.returncode == 0, (tmp_path / "server.log").read_text()
    assert _app(cluster, "lake-connect-server", "completed")["id"] == app["id"]


def test_the_executors_read_an_s3_volume_in_place(
    cluster: Cluster, tmp_path: Path, s3_endpoint: str
) -> None:
    """A COPY and a SELECT from a volume in S3: the worker's executor reads the objects through
    S3A with the connection's keys, which appear in no log; the driver keeps no local copies. A
    COPY INTO VOLUME's file is staged in the S3 warehouse, where the executor writes it."""
    s3, bucket = new_bucket(s3_endpoint)
    s3.upload_fileobj(io.BytesIO(b"1,a\n2,b\n"), bucket, "in/a.csv")
    s3.upload_fileobj(io.BytesIO(b"3,c\n"), bucket, "in/b.csv")
    time.sleep(1.1)  # older than the settle window, as a file a pipe would load
    before = _app_ids(cluster)
    secret = "wire-only-8f3a5c"
    env = _env(
        tmp_path,
        LAKE_SPARK_MASTER=cluster.master_url,
        LAKE_WAREHOUSE=f"s3a://{bucket}/warehouse/",
        **aws_env(s3_endpoint),
    )
    output = _lake_sql(
        env,
        f"CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = '{s3_endpoint}' "
        f"ACCESS_ID = 'testing' ACCESS_KEY = '{secret}' REGION = 'us-east-1'; "
        f"CREATE EXTERNAL VOLUME v LOCATION 's3://{bucket}/in/' USING CONNECTION c; "
        "CREATE TABLE t (id BIGINT, name STRING); COPY INTO t FROM VOLUME v USING CSV; "
        "SELECT count(*) AS n FROM VOLUME v USING CSV; "
        "COPY INTO VOLUME v SUBDIRECTORY 'out/' FROM TABLE t FILE_FORMAT = (TYPE = CSV)",
    )
    assert "COPY: 2 files loaded (3 rows), 0 failed, 0 purged" in output
    assert "n\n-\n3\n(1 row)\nexported to volume v: out/part00001.csv\n" in output, output
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert "in/out/part00001.csv" in keys
    assert not [key for key in keys if "_staging" in key]
    app = _app(cluster, "lake", "completed", before)
    assert _finished_tasks(cluster, app["id"]) > 0
    assert not (tmp_path / "cache").exists()
    assert not list((tmp_path / "tmp").iterdir())
    logs = [*tmp_path.rglob("*.log"), *(cluster.work_dir / app["id"]).rglob("std*")]
    assert logs
    assert not [log for log in logs if secret in log.read_text(errors="replace")]


def test_lake_spark_cluster_serves_until_interrupted(tmp_path: Path) -> None:
    port, webui_port = free_port(), free_port()
    command = [sys.executable, "-m", "lake_assets.cli", "spark-cluster", "--dir", str(tmp_path)]
    command += ["--port", str(port), "--webui-port", str(webui_port), "--memory", "512m"]
    process = subprocess.Popen(
        command, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert banner.startswith(f"Spark standalone master at spark://{LOOPBACK}:{port} "), banner
        (worker,) = master_status(f"http://{LOOPBACK}:{webui_port}")["workers"]
        assert (worker["state"], worker["cores"], worker["memory"]) == ("ALIVE", 1, 512)
        assert (tmp_path / "logs" / "master.log").exists()
    finally:
        process.send_signal(signal.SIGINT)
        status = process.wait()
    assert status == 0, process.stderr.read() if process.stderr else status
    assert not listening(port)
    assert not listening(webui_port)
    assert _workers_under(tmp_path) == []
