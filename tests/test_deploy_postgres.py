"""deploy/: a Dagster instance whose runs and events live in a real Postgres, and the code location
served over gRPC as deploy/workspace.yaml expects it, with the lakehouse catalog in Postgres too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster import AssetKey, DagsterInstance, MaterializeResult, asset, materialize

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.tables.entry import TableEntry
from resources.catalog import CatalogResource
from resources.spark_server import free_port

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
DAGSTER = Path(sys.executable).with_name("dagster")


@asset
def catalog_tables(catalog: CatalogResource) -> MaterializeResult:
    """The catalog's table names, read in a run through the code location's catalog resource."""
    return MaterializeResult(
        metadata={"tables": [entry.name for entry in catalog.catalog.entries(TableEntry)]}
    )


def test_a_materialization_is_stored_in_postgres_and_read_back(deploy_env: dict[str, str]):
    Catalog(deploy_env["LAKE_CATALOG_URL"]).add(
        TableEntry(name="orders", location="/warehouse/orders-1", columns=(Column("id", "BIGINT"),))
    )
    resources = build_definitions(LakeSettings.from_env()).resources

    with DagsterInstance.get() as instance:
        assert not instance.nux_enabled  # no onboarding dialog over the UI's first page
        result = materialize(
            [catalog_tables], instance=instance, resources={"catalog": resources["catalog"]}
        )
        assert result.success
        event = instance.get_latest_materialization_event(AssetKey("catalog_tables"))
        assert event is not None
        assert event.run_id == result.run_id
        assert event.asset_materialization.metadata["tables"].value == ["orders"]
        assert instance.get_run_by_id(result.run_id).is_success

    engine = sa.create_engine(deploy_env["STORAGE_URL"], poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        assert {"runs", "event_logs"} <= set(sa.inspect(conn).get_table_names())
        stored = conn.execute(
            sa.text("SELECT count(*) FROM event_logs WHERE run_id = :run"), {"run": result.run_id}
        ).scalar()
    assert stored > 0
    home = Path(deploy_env["DAGSTER_HOME"])
    assert not list(home.rglob("*.db"))  # nothing in the embedded SQLite storage


@pytest.fixture
def code_server(deploy_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """deploy/code-server.sh on a free loopback port; the environment its clients need."""
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{DAGSTER.parent}{os.pathsep}{os.environ['PATH']}",
        "LAKE_CODE_SERVER_BIND": "127.0.0.1",
        "LAKE_CODE_SERVER_HOST": "127.0.0.1",
        "LAKE_CODE_SERVER_PORT": str(port),
    }
    log = Path(deploy_env["DAGSTER_HOME"]) / "code-server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(DEPLOY / "code-server.sh")],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        health = [str(DAGSTER), "api", "grpc-health-check", "--host", "127.0.0.1"]
        while subprocess.run([*health, "--port", str(port)], capture_output=True).returncode:
            if process.poll() is not None:
                pytest.fail(f"the code server exited:\n{log.read_text()}")
            time.sleep(0.5)
        yield env
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()


def test_the_workspace_reaches_the_code_location_served_over_grpc(code_server: dict[str, str]):
    Catalog(code_server["LAKE_CATALOG_URL"]).add(
        TableEntry(name="orders", location="/warehouse/orders-1", columns=(Column("id", "BIGINT"),))
    )
    validated = subprocess.run(
        [str(DAGSTER), "definitions", "validate", "-w", str(DEPLOY / "workspace.yaml")],
        env=code_server,
        capture_output=True,
        text=True,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "Validation successful for code location lake." in validated.stdout + validated.stderr
