"""Issue 21's proof on one machine: the sales walkthrough with nothing on the embedded defaults. A
Spark standalone master and worker run every statement and every run; tables live in an S3 warehouse
and the files land in an S3 volume (moto's server over HTTP); our catalog and Dagster's storage
are Postgres databases; the real daemon, on deploy/dagster.yaml, drives the pipe, the dynamic
table and a task consuming a stream, each exactly once."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus

from lake_assets.core.catalog import Catalog
from lake_assets.daemon import spawn_daemon
from lake_assets.dynamic_tables.refreshes import (
    REFRESHES,
    RefreshMode,
    RefreshState,
    RefreshTrigger,
)
from lake_assets.pipes.load_records import load_history
from lake_assets.tasks.run_history import RUNS, TaskRunState
from resources.spark_cluster import Cluster
from resources.spark_server import LOOPBACK
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, aws_env, new_bucket, s3_client
from tests.test_daemon import UNFINISHED, failed_steps

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
# Generous: every run starts a driver of its own, and they share two cores with the suite.
PATIENCE_SECONDS = 900
SETUP = """
CREATE STORAGE CONNECTION landing TYPE S3 ENDPOINT = '{endpoint}'
  ACCESS_ID = '{access_id}' ACCESS_KEY = '{access_key}' REGION = '{region}';
CREATE EXTERNAL VOLUME v LOCATION 's3://{bucket}/incoming/' USING CONNECTION landing;
CREATE TABLE ods (id BIGINT, category STRING, amount DECIMAL(10,2));
CREATE PIPE p POLL_INTERVAL = 2 AS COPY INTO ods FROM VOLUME v USING CSV PURGE = TRUE;
CREATE DYNAMIC TABLE summary AS
  SELECT category, COUNT(*) AS orders, SUM(amount) AS total FROM ods GROUP BY category;
CREATE TABLE STREAM s ON TABLE ods WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
CREATE TABLE audit (id BIGINT, category STRING);
CREATE TASK consume WHEN STREAM_HAS_DATA('s') AS INSERT INTO audit SELECT id, category FROM s
"""
CHECK = """
SELECT category, orders, total FROM summary ORDER BY category;
SELECT id, category FROM audit ORDER BY id;
SELECT count(*) AS rows FROM ods
"""
EXPECTED = """\
category    | orders | total
------------+--------+------
Electronics | 1      | 10.00
Sports      | 2      | 6.75
(2 rows)
id | category
---+------------
1  | Electronics
2  | Sports
3  | Sports
(3 rows)
rows
----
3
(1 row)
"""


@pytest.fixture
def deployment(
    deploy_env: dict[str, str],
    spark_cluster: Cluster,
    s3_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, str]:
    """The environment every process of the deployment shares (deploy_env's Dagster and catalog
    in Postgres, and the cluster, the warehouse and S3), also set in this one (which reads
    Dagster's instance and the catalog)."""
    _, bucket = new_bucket(s3_endpoint)
    env = {
        **deploy_env,
        "LAKE_SPARK_MASTER": spark_cluster.master_url,
        "LAKE_WAREHOUSE": f"s3a://{bucket}/warehouse/",
        **aws_env(s3_endpoint),
        "SPARK_LOCAL_IP": LOOPBACK,
        "BUCKET": bucket,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("LAKE_SPARK_REMOTE", raising=False)
    return env


def lake_sql(script: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "lake_assets.cli", "sql", "-e", script],
        env=os.environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def wait_until(what: str, done: Callable[[], bool], log: Path) -> None:
    """Until `done`, failing at once when a run failed (its error) or after the patience."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    with DagsterInstance.get() as instance:
        while not done():
            assert not (failed := failed_steps(instance)), f"{what}: a run failed: {failed}"
            assert time.monotonic() < deadline, f"{what} did not happen; log:\n{log.read_text()}"
            time.sleep(2)


def test_the_sales_walkthrough_on_a_cluster_an_s3_warehouse_and_postgres(
    deployment: dict[str, str], spark_cluster: Cluster, s3_endpoint: str, tmp_path: Path
) -> None:
    bucket = deployment["BUCKET"]
    lake_sql(
        SETUP.format(
            endpoint=s3_endpoint,
            access_id=ACCESS_ID,
            access_key=ACCESS_KEY,
            region=REGION,
            bucket=bucket,
        )
    )
    catalog = Catalog(deployment["LAKE_CATALOG_URL"])
    s3 = s3_client(s3_endpoint)
    log = tmp_path / "daemon.log"
    with log.open("wb") as output:
        daemon = spawn_daemon(dict(os.environ), output)
    try:
        s3.upload_fileobj(
            io.BytesIO(b"1,Electronics,10.00\n2,Sports,5.50\n3,Sports,1.25\n"),
            bucket,
            "incoming/day1.csv",
        )
        wait_until("the pipe's load", lambda: bool(load_history(catalog, "ods")), log)
        wait_until("the summary's refresh", lambda: upstream_refreshed(catalog), log)
        wait_until("the task's run", lambda: bool(RUNS.newest_first(catalog, "consume")), log)
        with DagsterInstance.get() as instance:
            wait_until("the runs' end", lambda: not instance.get_runs(UNFINISHED), log)
            runs = instance.get_runs()
    finally:
        daemon.stop()

    (load,) = load_history(catalog, "ods")
    assert (load.status, load.rows_loaded) == ("LOADED", 3)
    (run,) = RUNS.newest_first(catalog, "consume")
    assert (run.state, run.rows_written) == (TaskRunState.SUCCEED, 3)
    assert lake_sql(CHECK) == EXPECTED
    assert runs
    assert {run.status for run in runs} == {DagsterRunStatus.SUCCESS}
    # Every run's Spark ran on the worker, and every table is in the bucket, none on local disk.
    apps = spark_cluster.state()["completedapps"]
    assert len([app for app in apps if app["name"] == "lake"]) >= len(runs)
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    for table in ("ods", "summary", "audit"):
        assert any(key.startswith(f"warehouse/{table}-") for key in keys), keys
    assert not any(key.startswith("incoming/") for key in keys)  # purged once loaded
    assert not (Path(deployment["LAKE_HOME"]) / "warehouse").exists()


def upstream_refreshed(catalog: Catalog) -> bool:
    """The summary was refreshed incrementally because the pipe's load changed ods."""
    return any(
        (r.refresh_trigger, r.refresh_mode, r.state)
        == (RefreshTrigger.UPSTREAM, RefreshMode.INCREMENTAL, RefreshState.SUCCEED)
        for r in REFRESHES.newest_first(catalog, "summary")
    )
