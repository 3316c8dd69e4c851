"""A writer in a process of its own: its own Spark session runs one statement many times against
a shared lake (catalog under LAKE_HOME, warehouse local or LAKE_WAREHOUSE), starting when told."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource


def start(
    home: Path, name: str, statement: str, times: int, env: dict[str, str]
) -> subprocess.Popen:
    """A writer process that runs `statement` `times` times once the file `home/go` exists."""
    with (home / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.warehouse.writer", name, statement, str(times)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=Path(__file__).parents[2],
        )


def main(name: str, statement: str, times: int) -> None:
    settings = LakeSettings.from_env()
    spark = DeltaSparkResource.from_settings(
        settings, console_log=str(settings.lake_home / f"{name}-spark.log")
    ).spark_session
    session = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
    session.sql("SELECT 1")  # warm: both writers start their statements together
    (settings.lake_home / f"{name}.ready").touch()
    while not (settings.lake_home / "go").exists():
        time.sleep(0.05)
    for number in range(times):
        session.sql(statement.format(writer=name, number=number))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
