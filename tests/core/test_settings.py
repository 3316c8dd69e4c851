"""LakeSettings.from_env: where the lake lives and how Spark runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lake_assets.core.settings import DEFAULT_SPARK_MASTER, SPARK_SERVER_FILE, LakeSettings
from lake_assets.frame_inputs import session_settings

LAKE_VARIABLES = (
    "LAKE_HOME",
    "LAKE_SPARK_REMOTE",
    "LAKE_SPARK_MASTER",
    "LAKE_JARS_DIR",
    "LAKE_SPARK_CONF",
    "LAKE_CATALOG_URL",
    "LAKE_WAREHOUSE",
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """An environment without any LAKE_* variable, with DAGSTER_HOME and the cache in tmp_path."""
    for name in LAKE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return monkeypatch


def test_defaults_put_the_lake_under_dagster_home(env, tmp_path):
    settings = LakeSettings.from_env()
    lake = tmp_path / "dagster_home" / "lake"
    assert settings.lake_home == lake
    assert settings.catalog_path == lake / "catalog.db"
    assert settings.warehouse == lake / "warehouse"
    assert settings.log_dir == lake / "logs"
    assert settings.spark_master == DEFAULT_SPARK_MASTER == "local[2]"
    assert settings.jars_dir == tmp_path / "cache" / "lake-assets" / "jars"
    assert settings.spark_conf == {}
    assert settings.catalog_location == str(lake / "catalog.db")
    assert settings.warehouse_location == str(lake / "warehouse")


def test_a_shared_catalog_and_an_object_storage_warehouse_come_from_urls(env):
    env.setenv("LAKE_CATALOG_URL", "postgresql+psycopg://lake@127.0.0.1:5432/lake")
    env.setenv("LAKE_WAREHOUSE", "s3a://bucket/lake/")
    settings = LakeSettings.from_env()
    assert settings.catalog_location == "postgresql+psycopg://lake@127.0.0.1:5432/lake"
    assert settings.warehouse_location == "s3a://bucket/lake"


def test_without_dagster_home_the_lake_is_under_the_working_directory(env, tmp_path):
    env.delenv("DAGSTER_HOME")
    env.chdir(tmp_path)
    assert LakeSettings.from_env().lake_home == tmp_path / "dagster_home" / "lake"


def test_lake_home_wins_over_dagster_home(env, tmp_path):
    env.setenv("LAKE_HOME", str(tmp_path / "elsewhere"))
    settings = LakeSettings.from_env()
    assert settings.lake_home == tmp_path / "elsewhere"
    assert settings.catalog_path == tmp_path / "elsewhere" / "catalog.db"


def test_a_relative_lake_home_is_the_working_directorys(env, tmp_path):
    """As the Python API's `lake_home="dagster_home/lake"` gives it: Spark would otherwise read
    a relative warehouse path against its own directory."""
    env.chdir(tmp_path)
    env.setenv("LAKE_HOME", "dagster_home/lake")
    assert LakeSettings.from_env().lake_home == tmp_path / "dagster_home" / "lake"
    built = session_settings({"lake_home": "other/../lake"})
    assert built.lake_home == tmp_path / "lake"
    assert built.warehouse_location == str(tmp_path / "lake" / "warehouse")


@pytest.mark.slow
def test_a_warm_server_of_the_lake_home_is_used_by_itself(env, tmp_path):
    """`make dev`'s Spark server announces itself under the lake home; `lake sql` finds it."""
    lake = tmp_path / "dagster_home" / "lake"
    lake.mkdir(parents=True)
    assert LakeSettings.from_env().spark_remote is None  # no server
    announced = lake / SPARK_SERVER_FILE
    announced.write_text(json.dumps({"remote": "sc://127.0.0.1:15002", "pid": os.getpid()}))
    assert LakeSettings.from_env().spark_remote == "sc://127.0.0.1:15002"
    env.setenv("LAKE_SPARK_REMOTE", "")  # set empty: a JVM of its own
    assert LakeSettings.from_env().spark_remote is None
    env.setenv("LAKE_SPARK_REMOTE", "sc://127.0.0.1:16000")  # set: that server
    assert LakeSettings.from_env().spark_remote == "sc://127.0.0.1:16000"
    env.delenv("LAKE_SPARK_REMOTE")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    announced.write_text(json.dumps({"remote": "sc://127.0.0.1:15002", "pid": int(gone.stdout)}))
    assert LakeSettings.from_env().spark_remote is None  # its process is gone
    announced.write_text("{")
    assert LakeSettings.from_env().spark_remote is None


def test_empty_variables_mean_the_defaults(env, tmp_path):
    for name in LAKE_VARIABLES:
        env.setenv(name, "")
    settings = LakeSettings.from_env()
    assert settings.lake_home == tmp_path / "dagster_home" / "lake"
    assert settings.spark_master == DEFAULT_SPARK_MASTER
    assert settings.jars_dir == tmp_path / "cache" / "lake-assets" / "jars"
    assert settings.spark_conf == {}


def test_spark_master_and_jars_dir_from_the_environment(env, tmp_path):
    env.setenv("LAKE_SPARK_MASTER", "spark://head:7077")
    env.setenv("LAKE_JARS_DIR", str(tmp_path / "jars"))
    settings = LakeSettings.from_env()
    assert settings.spark_master == "spark://head:7077"
    assert settings.jars_dir == tmp_path / "jars"


def test_spark_conf_pairs_are_trimmed(env):
    env.setenv("LAKE_SPARK_CONF", "a=b, c = d")
    assert LakeSettings.from_env().spark_conf == {"a": "b", "c": "d"}


def test_spark_conf_accepts_newlines_and_blank_entries(env):
    env.setenv("LAKE_SPARK_CONF", "spark.driver.memory=2g\n\nspark.sql.shuffle.partitions = 8,\n")
    assert LakeSettings.from_env().spark_conf == {
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "8",
    }


def test_spark_conf_value_may_contain_equals_signs(env):
    env.setenv("LAKE_SPARK_CONF", "spark.driver.extraJavaOptions=-Da=b -Dc=d")
    assert LakeSettings.from_env().spark_conf == {
        "spark.driver.extraJavaOptions": "-Da=b -Dc=d",
    }


def test_spark_conf_value_may_be_empty(env):
    env.setenv("LAKE_SPARK_CONF", "spark.some.flag=")
    assert LakeSettings.from_env().spark_conf == {"spark.some.flag": ""}


def test_spark_conf_later_entries_win(env):
    env.setenv("LAKE_SPARK_CONF", "a=1, a=2")
    assert LakeSettings.from_env().spark_conf == {"a": "2"}


def test_spark_conf_entry_without_a_value_is_refused(env):
    env.setenv("LAKE_SPARK_CONF", "a=b, novalue")
    with pytest.raises(ValueError, match=r"^LAKE_SPARK_CONF entry 'novalue' is not key=value$"):
        LakeSettings.from_env()


def test_spark_conf_entry_without_a_key_is_refused(env):
    env.setenv("LAKE_SPARK_CONF", " = value")
    with pytest.raises(ValueError, match=r"entry '= value' is not key=value"):
        LakeSettings.from_env()
