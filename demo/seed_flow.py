"""`make demo`: the seed's flow, hands-off through the real Dagster daemon.

Tables (demo/tables.sql) → volumes, exports and the pipe (demo/pipeline.sql) → a batch of files
lands in the pipe's volume → the daemon's sensor sees it and runs the ingestion → load_history."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lake_assets.engine.session import LakeSession
from lake_assets.output import write_result
from resources.catalog import Catalog
from resources.settings import LakeSettings
from resources.spark import DeltaSparkResource

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_SECONDS = 180


def run(session: LakeSession, sql: str) -> None:
    for result in session.run(sql):
        write_result(result, "table", sys.stdout)


def banner(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def main() -> None:
    settings = LakeSettings.from_env()
    files = Path(os.environ["DAGSTER_HOME"]) / "demo-files"
    shutil.rmtree(files, ignore_errors=True)
    spark = DeltaSparkResource.from_settings(
        settings, console_log=str(settings.log_dir / "spark-console.log")
    )
    session = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark.spark_session)

    banner("Step 3: the source table (demo/tables.sql)")
    run(session, (ROOT / "demo" / "tables.sql").read_text())
    banner("Steps 1-5: connection, volumes, exports and the pipe (demo/pipeline.sql)")
    run(session, (ROOT / "demo" / "pipeline.sql").read_text().replace("${FILES}", str(files)))

    banner("Starting the Dagster daemon: the pipe's sensor now watches pipe_vol")
    log = open(settings.log_dir / "demo-daemon.log", "w")  # noqa: SIM115 - closed below
    daemon = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("dagster-daemon")),
            "run",
            "-w",
            str(ROOT / "workspace.yaml"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    try:
        banner("A new file lands in the volume (COPY INTO VOLUME pipe_vol …); no manual trigger")
        started = time.monotonic()
        run(
            session,
            "COPY INTO VOLUME pipe_vol SUBDIRECTORY '/' FROM "
            "(SELECT * FROM sales_source WHERE dt = '2026-06-01') FILE_FORMAT = (TYPE = CSV)",
        )
        catalog = session.catalog
        while not any(r.status == "LOADED" for r in catalog.load_history("sales_ods")):
            if time.monotonic() - started > TIMEOUT_SECONDS:
                raise SystemExit(
                    f"the pipe did not load the file within {TIMEOUT_SECONDS} s; see {log.name}"
                )
            time.sleep(1)
        print(f"loaded by the pipe {time.monotonic() - started:.1f} s after the file landed")
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()

    banner("load_history and the validation")
    run(
        session,
        "SELECT * FROM load_history('sales_ods');"
        "SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_source "
        "UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM sales_ods;"
        "DESC PIPE EXTENDED sales_pipe",
    )
    remaining = sorted(p.name for p in (files / "incoming").rglob("*") if p.is_file())
    print(f"files left in pipe_vol after PURGE: {remaining or 'none'}")


if __name__ == "__main__":
    main()
