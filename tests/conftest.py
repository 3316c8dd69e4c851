"""One Spark session for the whole test session; a fresh catalog and warehouse per test; one moto
S3 server, one Postgres server, one Kafka broker and one Spark standalone cluster for the whole
test session (started only by the tests that ask for `s3_endpoint`, `postgres_url`,
`kafka_broker` or `spark_cluster`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from sqlalchemy.engine import make_url

import tests.histories_settings  # noqa: F401  (it loads the hypothesis profile)
from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource
from resources.spark_cluster import Cluster, local_cluster
from tests.kafka_server import kafka_broker_fixture
from tests.postgres_server import new_database, postgres_url_fixture
from tests.s3_server import aws_env, s3_endpoint_fixture

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"

s3_endpoint = s3_endpoint_fixture(scope="session")
postgres_url = postgres_url_fixture(scope="session")
kafka_broker = kafka_broker_fixture(scope="session")

# The longest tests (TPC-H's 22 queries through rounds of changes, a whole deployment: cluster,
# S3, Postgres, the daemon; the property tests' histories) open the workers' shares in turn: the
# work-stealing scheduler hands each worker a contiguous share of the collection and steals from
# the ends of the shares, so a long test at the end of one would finish the run alone. The rest
# keep their file order.
LONGEST = (
    "tests/dynamic_tables/test_tpch.py",
    "tests/test_scale_out.py",
    "tests/dynamic_tables/test_properties.py",
    "tests/dynamic_tables/test_properties_subqueries.py",
)


# Fixtures that start a JVM, a server or another process. A test asking for one, or for a fixture
# built on one (`lake` and every fixture over `spark` or `deploy_env`: pytest's closure of a
# test's fixtures holds them all), is no unit test.
STARTS_PROCESSES = frozenset({
    "spark", "spark_cluster", "s3_endpoint", "postgres_url", "kafka_broker",
    "sales_home", "connect_url", "spark_remote", "holder", "other_process", "workers",
})  # fmt: skip
# Parameters of fixtures that ask for one of those only when given that parameter.
STARTS_PROCESSES_WITH = frozenset({("location", "postgres")})


def _starts_processes(item: pytest.Item) -> bool:
    """Whether the test needs a JVM, a server or another process: `make unit` leaves it out."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    return bool(
        STARTS_PROCESSES & set(getattr(item, "fixturenames", ()))
        or any(params.get(name) == value for name, value in STARTS_PROCESSES_WITH)
        or item.get_closest_marker("slow")  # a test that starts a process itself
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not _starts_processes(item):
            item.add_marker(pytest.mark.unit)
    place = {path: index for index, path in enumerate(LONGEST)}
    ordered = sorted(items, key=lambda item: place.get(item.nodeid.split("::")[0], len(LONGEST)))
    longest = [item for item in ordered if item.nodeid.split("::")[0] in place]
    rest = ordered[len(longest) :]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    arranged: list[pytest.Item] = []
    for worker in range(workers):
        share = (len(items) - len(arranged)) // (workers - worker)  # as the scheduler deals
        opening = longest[worker::workers]
        arranged += opening + rest[: max(0, share - len(opening))]
        rest = rest[max(0, share - len(opening)) :]
    items[:] = arranged + rest


# Every JVM the tests start (Spark drivers, a Connect server, the Kafka broker, a cluster's daemons
# and executors) compiles with C1 only: on tables of a few rows, C2's compiling cost about a third
# of the JVMs' CPU and never paid back. C1 alone gets a 48 MB code cache, which a worker's driver
# filled within minutes (thousands of generated query classes): its sweeper then took a quarter
# of the JVM's CPU and new code ran interpreted, so the cache is sized as tiered compilation's.
# The serial collector: three workers' JVMs share two cores, and G1's concurrent threads cost
# more CPU than the pauses they save on heaps of small, short-lived objects (the driver's CPU over
# rounds of small statements fell by 12 % in bench/jvm_options.py).
# The run inherits these through LAKE_JVM_OPTIONS.
os.environ.setdefault(
    "LAKE_JVM_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m -XX:+UseSerialGC"
)
# Spark evaluates the tests' queries interpreted, as its own test suites can: generating and
# compiling Java code for each query of a few rows cost more than it saved. The driver's CPU over
# rounds of small statements fell by 29 % (bench/jvm_options.py with this LAKE_SPARK_CONF); the
# results are Spark's either way. Plans are static and shuffles and Delta's state reconstruction
# run one task each: on tables of a few rows, adaptive re-planning and more tasks only cost time
# (another 9 % of the driver's CPU in bench/jvm_options.py). Subprocesses (`lake sql`, the
# daemon, Connect servers) inherit it.
os.environ.setdefault(
    "LAKE_SPARK_CONF",
    "spark.sql.codegen.wholeStage=false,spark.sql.codegen.factoryMode=NO_CODEGEN,"
    "spark.sql.adaptive.enabled=false,spark.sql.shuffle.partitions=1,"
    "spark.databricks.delta.snapshotPartitions=1",
)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    home = tmp_path_factory.mktemp("spark-home")
    settings = LakeSettings.from_env()
    # One JVM serves ~600 tests (thousands of Delta tables, each log cached): 2g ran out late in
    # the suite and broadcasts failed with "Not enough memory to build and broadcast the table".
    settings = LakeSettings(
        lake_home=home,
        jars_dir=settings.jars_dir,
        spark_conf={**settings.spark_conf, "spark.driver.memory": "4g"},
    )
    resource = DeltaSparkResource.from_settings(settings, console_log=str(home / "console.log"))
    session = resource.spark_session
    yield session
    session.stop()


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> LakeSession:
    settings = LakeSettings(lake_home=tmp_path)
    return LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: str) -> Iterator[Cluster]:
    """A standalone master and worker, started as docs/scale-out.md says where the S3 server's AWS
    variables are exported (executors inherit the worker's environment; this process's own is
    left as it was); afterwards each daemon's process group, executors too, is gone."""
    with ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in aws_env(s3_endpoint).items():
                patch.setenv(key, value)
            running = stack.enter_context(local_cluster(tmp_path_factory.mktemp("spark-cluster")))
        yield running
    for process in running.processes:
        with pytest.raises(ProcessLookupError):
            os.killpg(process.pid, 0)


@pytest.fixture
def deploy_env(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """DAGSTER_HOME holding a copy of deploy/dagster.yaml, the DAGSTER_PG_* variables naming a
    fresh database, and a lakehouse whose catalog is another fresh database."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    storage = make_url(new_database(postgres_url))
    env = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_HOST": str(storage.host),
        "DAGSTER_PG_PORT": str(storage.port),
        "DAGSTER_PG_USERNAME": str(storage.username),
        "DAGSTER_PG_PASSWORD": "",  # the test server trusts local connections
        "DAGSTER_PG_DB": str(storage.database),
        "LAKE_HOME": str(tmp_path / "lake"),
        "LAKE_CATALOG_URL": new_database(postgres_url),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    env["STORAGE_URL"] = storage.render_as_string(hide_password=False)
    return env
