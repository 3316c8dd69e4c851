"""The engine over Spark Connect: a real `lake spark-server` process, and the lake's statements
run through Connect sessions (the only test module that starts a second JVM)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from resources.spark import DeltaSparkResource, spark_conf
from resources.spark_server import (
    SERVER_CLASS,
    free_port,
    server_command,
)
from tests.connect_server import connect_server
from tests.ingest_helpers import files, local_volume, message, put, rows


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with connect_server(tmp_path_factory.mktemp("connect-server")) as url:
        yield url


@pytest.fixture
def remote(connect_url: str, tmp_path: Path) -> Iterator[DeltaSparkResource]:
    settings = LakeSettings(lake_home=tmp_path, spark_remote=connect_url)
    resource = DeltaSparkResource.from_settings(settings)
    yield resource
    resource.teardown_after_execution(None)


@pytest.fixture
def lake(remote: DeltaSparkResource, tmp_path: Path) -> LakeSession:
    settings = LakeSettings(lake_home=tmp_path, spark_remote=remote.remote)
    return LakeSession(Catalog(settings.catalog_path), settings, lambda: remote.spark_session)


def test_tables_and_dml_run_over_connect(lake: LakeSession) -> None:
    assert type(lake.spark).__module__ == "pyspark.sql.connect.session"
    lake.sql("CREATE TABLE t (id BIGINT, name STRING, amount DECIMAL(10,2))")
    assert message(lake, "INSERT INTO t VALUES (1, 'a', 1.50), (2, 'b', 2.00), (3, 'c', 3.25)") == (
        "INSERT: 3 inserted, 0 updated, 0 deleted; t is at version 1 with 3 rows"
    )
    assert message(lake, "UPDATE t SET amount = amount * 2 WHERE id >= 2") == (
        "UPDATE: 0 inserted, 2 updated, 0 deleted; t is at version 2 with 3 rows"
    )
    assert message(lake, "DELETE FROM t WHERE id = 1") == (
        "DELETE: 0 inserted, 0 updated, 1 deleted; t is at version 3 with 2 rows"
    )
    assert rows(lake, "SELECT id, name, CAST(amount AS STRING) FROM t ORDER BY id") == [
        (2, "b", "4.00"),
        (3, "c", "6.50"),
    ]
    assert rows(lake, "SELECT COUNT(*) FROM t VERSION AS OF 1") == [(3,)]
    (history,) = lake.sql("DESC HISTORY t")
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in history.rows] == [
        (3, "DELETE", 0, 0, 1),
        (2, "UPDATE", 0, 2, 0),
        (1, "WRITE", 3, 0, 0),
        (0, "CREATE TABLE", None, None, None),
    ]
    assert (
        lake.catalog.get(TableEntry, "t").version,
        lake.catalog.get(TableEntry, "t").row_count,
    ) == (3, 2)


def test_copy_into_from_a_volume_over_connect_loads_each_file_once(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    good = put(volume, "good.csv", "1,a\n2,b\n")
    put(volume, "bad.csv", "3,c\nx,d\n")
    copy = "COPY INTO t FROM VOLUME v USING CSV PURGE = TRUE"
    assert message(lake, copy) == (
        "COPY: 1 files loaded (2 rows), 1 failed, 1 purged; t is at version 1"
    )
    assert message(lake, copy) == "COPY: 0 files loaded (0 rows), 0 failed, 0 purged"
    assert files(volume) == ["bad.csv"]
    assert rows(
        lake,
        "SELECT file_path, status, rows_loaded, first_error_message, commit_version "
        "FROM load_history('t') ORDER BY status",
    ) == [
        (good.as_uri(), "LOADED", 2, None, 1),
        (
            (volume / "bad.csv").as_uri(),
            "LOAD_FAILED",
            0,
            "column id: 'x' is not a valid BIGINT",
            None,
        ),
    ]
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [(1, "a"), (2, "b")]
    (commit,) = [r for r in lake.sql("DESC HISTORY t")[0].rows if r[0] == 1]
    assert commit[3] == 2


@pytest.mark.slow
def test_each_resource_has_its_own_session(connect_url: str, tmp_path: Path) -> None:
    settings = LakeSettings(lake_home=tmp_path, spark_remote=connect_url)
    first, second = (DeltaSparkResource.from_settings(settings) for _ in range(2))
    try:
        first.spark_session.conf.set("spark.databricks.delta.commitInfo.userMetadata", "mine")
        assert first.spark_session.conf.get("spark.databricks.delta.commitInfo.userMetadata") == (
            "mine"
        )
        assert (
            second.spark_session.conf.get("spark.databricks.delta.commitInfo.userMetadata", None)
            is None
        )
    finally:
        first.teardown_after_execution(None)
        second.teardown_after_execution(None)


def test_no_server_at_the_url_is_one_clear_error(tmp_path: Path) -> None:
    url = f"sc://127.0.0.1:{free_port()}"
    resource = DeltaSparkResource.from_settings(LakeSettings(lake_home=tmp_path, spark_remote=url))
    with pytest.raises(LakeError, match=f"no Spark Connect server answers at {url}") as error:
        resource.spark_session  # noqa: B018 - starting the session is the check
    assert "lake spark-server" in error.value.fix


def test_the_server_command_binds_loopback_with_the_local_session_configuration(
    tmp_path: Path,
) -> None:
    settings = LakeSettings(lake_home=tmp_path, jars_dir=LakeSettings.from_env().jars_dir)
    command = server_command(settings, 15999)
    assert command[0].endswith("pyspark/bin/spark-submit")
    assert command[1:3] == ["--class", SERVER_CLASS]
    conf = dict(value.split("=", 1) for value in command[4::2])
    assert command[3::2] == ["--conf"] * len(conf)
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert conf["spark.connect.grpc.binding.port"] == "15999"
    assert {k: v for k, v in spark_conf(settings).items() if k != "spark.app.name"}.items() <= (
        conf.items()
    )
    assert any("delta-spark" in jar for jar in conf["spark.jars"].split(","))
