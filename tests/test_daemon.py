"""End to end through the real Dagster daemon and a Spark Connect server, as `make dev` runs them:
a file lands, the pipe's sensor loads it, the automation sensor refreshes the dynamic table."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from lake_assets.daemon import ROOT, spawn_daemon
from lake_assets.session import LakeSession
from resources.spark_server import free_port, server_url, spawn_server, stop
from tests.ingest_helpers import local_volume, put, rows

# Generous: the run processes share two cores with the rest of the suite.
PATIENCE_SECONDS = 600


def wait_until(what: str, done: Callable[[], bool], log: Path) -> None:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not done():
        assert time.monotonic() < deadline, (
            f"{what} did not happen; daemon log:\n" + log.read_text()
        )
        time.sleep(1)


def test_a_landed_file_is_loaded_and_its_summary_refreshed_without_a_manual_step(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(
        "CREATE TABLE ods (id BIGINT, category STRING, amount DECIMAL(10,2));"
        "CREATE PIPE p POLL_INTERVAL = 2 AS COPY INTO ods FROM VOLUME v USING CSV PURGE = TRUE;"
        "CREATE DYNAMIC TABLE summary AS "
        "SELECT category, COUNT(*) AS orders, SUM(amount) AS total FROM ods GROUP BY category"
    )
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", dagster_home)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "LAKE_HOME": str(lake.settings.lake_home),
    }
    port = free_port()
    log = tmp_path / "daemon.log"
    with (tmp_path / "server.log").open("wb") as server_log:
        server = spawn_server(port, env, server_log)
    env["LAKE_SPARK_REMOTE"] = server_url(port)
    with log.open("wb") as output:
        daemon = spawn_daemon(env, output)
    try:
        put(volume, "day1.csv", "1,Electronics,10.00\n2,Sports,5.50\n3,Sports,1.25\n")
        catalog = lake.catalog
        wait_until(
            "the pipe's load",
            lambda: any(r.status == "LOADED" for r in catalog.load_history("ods")),
            log,
        )
        wait_until(
            "the upstream refresh",
            lambda: any(
                r.refresh_trigger == "UPSTREAM" and r.refresh_mode == "INCREMENTAL"
                for r in catalog.refresh_history("summary")
            ),
            log,
        )
    finally:
        stop(daemon)
        stop(server)
    assert rows(lake, "SELECT category, orders, total FROM summary ORDER BY category") == [
        ("Electronics", 1, Decimal("10.00")),
        ("Sports", 2, Decimal("6.75")),
    ]
    assert list(volume.iterdir()) == []  # purged after the commit
