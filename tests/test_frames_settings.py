"""How a session is built: settings from the environment, the project's Spark, no Dagster loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.settings import LakeSettings
from lake_assets.frame_inputs import session_settings
from lake_assets.session import Session


def test_absent_settings_fall_back_to_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LAKE_HOME", str(tmp_path / "env-home"))
    monkeypatch.setenv("LAKE_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("LAKE_SPARK_CONF", "spark.a=1,spark.b=2")
    monkeypatch.setenv("LAKE_SPARK_REMOTE", "sc://127.0.0.1:15999")
    assert session_settings({"schema": "public", "vcluster": "default"}) == (
        LakeSettings.from_env()
    )
    chosen = session_settings(
        {"lake_home": tmp_path, "spark_conf": {"spark.b": 3}, "spark_remote": None}
    )
    assert (chosen.lake_home, chosen.spark_master, chosen.spark_conf, chosen.spark_remote) == (
        tmp_path,
        "local[1]",
        {"spark.a": "1", "spark.b": "3"},
        None,
    )


def test_create_builds_a_session_on_the_projects_spark_resource(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAKE_SPARK_REMOTE", raising=False)
    session = Session.builder.configs(
        {"lake_home": str(tmp_path), "schema": "public", "vcluster": "default"}
    ).create()
    assert session.lake.catalog.url.endswith(str(tmp_path / "catalog.db"))
    assert session.sql("SHOW TABLES").collect() == []  # no Spark needed
    assert session.spark is spark  # the process's JVM session, as the resource builds it


@pytest.mark.slow
def test_the_session_module_loads_no_dagster() -> None:
    code = (
        "import sys\n"
        "from lake_assets.session import Session\n"
        "from lake_assets import functions as F\n"
        "assert Session.__module__ == 'lake_assets.frames' and F.col\n"
        "print(sorted(m for m in sys.modules if m.startswith('dagster')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
