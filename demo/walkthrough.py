"""`make demo`: the whole flow, hands-off through the real Dagster daemon.

Tables (demo/tables.sql) → volumes, exports and the pipe (demo/pipeline.sql) → the dynamic table
(demo/dynamic.sql) → table streams (demo/streams.sql) → tasks on a stream of sales_ods
and on a volume stream (demo/tasks.sql) → the daemon starts, with a warm Spark Connect server for
its runs, as `make dev` does → two batches of files land in the pipe's volume; each time the
pipe's sensor loads them into sales_ods, the lag sensor refreshes sales_summary within its target
lag and the task record_sales logs the new rows → sales_ods gains a column and a third batch
carries it through → files land in my_data_vol and record_landed_files records them; all with no
manual step."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from lake_assets.changes import dagster_reporter
from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.daemon import spawn_daemon
from lake_assets.dynamic_tables.refreshes import REFRESHES, RefreshRecord
from lake_assets.output import write_result
from lake_assets.pipes.load_records import LoadRecord, load_history
from lake_assets.session import LakeSession
from lake_assets.tasks.run_history import RUNS, TaskRunRecord
from resources.spark import DEFAULT_CONNECT_PORT, DeltaSparkResource, remote_address
from resources.spark_server import server_url, spawn_server, stop

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_SECONDS = 300
BATCHES = {
    "batch1/": "SELECT * FROM sales_source",
    # With one refund whose amount is negative: sales_ods's expectation keeps it out.
    "batch2/": (
        "SELECT id + 5 AS id, product, category, amount, '2026-06-02' AS dt FROM sales_source "
        "UNION ALL SELECT 99, 'Refund', 'Books', -45.50, '2026-06-02'"
    ),
}
# The source gains a field: the table takes it in place, its pipe loads it, the summary goes on.
NEW_COLUMN = "ALTER TABLE sales_ods ADD COLUMN channel STRING COMMENT 'Sales channel'"
WITH_CHANNEL = (
    "SELECT id + 10 AS id, product, category, amount, '2026-06-03' AS dt, 'web' AS channel "
    "FROM sales_source"
)
VALIDATION = (
    "SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_source "
    "UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM sales_ods "
    "UNION ALL SELECT 'Summary' AS stage, COUNT(*) AS rows FROM sales_summary"
)


def run(session: LakeSession, sql: str) -> None:
    for result in session.run(sql):
        write_result(result, "table", sys.stdout)


def banner(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def wait_for(what: str, done: Callable[[], bool], log: Path) -> float:
    """Seconds until `done()`; the daemon's log says why if it never happens."""
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > TIMEOUT_SECONDS:
            raise SystemExit(f"{what} did not happen within {TIMEOUT_SECONDS} s; see {log}")
        time.sleep(0.5)
    return time.monotonic() - started


def _refresh_after(catalog: Catalog, load: LoadRecord) -> RefreshRecord | None:
    """The first refresh of sales_summary that started after the load committed and changed it."""
    after = datetime.fromisoformat(load.last_copy_time)
    return next(
        (
            r
            for r in reversed(REFRESHES.newest_first(catalog, "sales_summary"))
            if r.state == "SUCCEED"
            and r.refresh_mode != "NO_DATA"
            and datetime.fromisoformat(r.start_time) >= after
        ),
        None,
    )


def _consumed(catalog: Catalog, task: str, stream: str, version: int) -> TaskRunRecord | None:
    """The successful run of `task` whose offsets on `stream` moved past `version`."""
    for run in RUNS.newest_first(catalog, task):
        before, after = run.streams.get(stream, (0, 0))
        if run.state == "SUCCEED" and before < version <= after:
            return run
    return None


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _logged_by_task(catalog: Catalog, load: LoadRecord, log: Path) -> None:
    """Wait for record_sales to consume the load's commit; time it from the catalog's records."""
    assert load.commit_version is not None
    wait_for(
        "record_sales's run",
        lambda: (
            _consumed(catalog, "record_sales", "sales_ods_changes", load.commit_version) is not None
        ),
        log,
    )
    run = _consumed(catalog, "record_sales", "sales_ods_changes", load.commit_version)
    assert run is not None
    print(
        f"pipe's load committed → record_sales committed ({run.rows_written} rows, "
        f"stream sensor + automation + run): {_seconds(load.last_copy_time, run.end_time):.1f} s"
    )


def _loaded(catalog: Catalog, folder: str) -> LoadRecord | None:
    return next(
        (
            r
            for r in load_history(catalog, "sales_ods")
            if r.status == "LOADED" and f"/{folder}" in r.file_path
        ),
        None,
    )


def land_batch(session: LakeSession, folder: str, query: str, log: Path) -> None:
    """Write a batch into the pipe's volume, then time each hop the daemon makes on its own."""
    catalog = session.catalog
    banner(f"Files land in pipe_vol/{folder} (COPY INTO VOLUME …); no manual trigger from here on")
    run(
        session,
        f"COPY INTO VOLUME pipe_vol SUBDIRECTORY '{folder}' FROM ({query}) "
        "FILE_FORMAT = (TYPE = CSV)",
    )
    loaded = wait_for("the pipe's load", lambda: _loaded(catalog, folder) is not None, log)
    print(f"file landed → rows in sales_ods (pipe sensor + ingestion run): {loaded:.1f} s")
    load = _loaded(catalog, folder)
    assert load is not None
    _logged_by_task(catalog, load, log)
    wait_for("the refresh of sales_summary", lambda: _refresh_after(catalog, load) is not None, log)
    refresh = _refresh_after(catalog, load)
    assert refresh is not None
    print(
        "pipe's load committed → sales_summary refreshed (its target lag: requested at 30 s "
        f"behind, within 60 s): {_seconds(load.last_copy_time, refresh.end_time):.1f} s, "
        f"lag {refresh.lag_seconds or 0.0:.1f} s"
    )
    run(session, f"{VALIDATION}; SELECT * FROM sales_summary ORDER BY category")


def _recording_runs(catalog: Catalog) -> int:
    history = RUNS.newest_first(catalog, "record_landed_files")
    return sum(1 for r in history if r.state == "SUCCEED" and r.rows_written)


def land_files(session: LakeSession, log: Path) -> None:
    """Files land in my_data_vol: its directory follows by itself and the task records them."""
    runs = _recording_runs(session.catalog)
    banner("Files land in my_data_vol/landing/; the volume stream's task records each one")
    run(
        session,
        "COPY INTO VOLUME my_data_vol SUBDIRECTORY 'landing/' FROM TABLE sales_source "
        "FILE_FORMAT = (TYPE = PARQUET)",
    )
    recorded = wait_for(
        "record_landed_files's run", lambda: _recording_runs(session.catalog) > runs, log
    )
    print(
        f"file landed → recorded in landed_files (directory sensor + refresh, stream sensor, "
        f"automation + run): {recorded:.1f} s"
    )
    run(session, "SELECT * FROM landed_files ORDER BY relative_path")


def main() -> None:
    files = Path(os.environ["DAGSTER_HOME"]) / "demo-files"
    shutil.rmtree(files, ignore_errors=True)
    url = os.environ.setdefault("LAKE_SPARK_REMOTE", server_url(DEFAULT_CONNECT_PORT))
    settings = LakeSettings.from_env()
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    banner(f"Starting a warm Spark Connect server on {url} (the demo and the runs share it)")
    server = spawn_server(remote_address(url)[1], dict(os.environ))
    daemon = None
    log = settings.log_dir / "demo-daemon.log"
    spark = DeltaSparkResource.from_settings(settings)
    try:
        catalog = Catalog(settings.catalog_location)
        # Its commits are events of their assets in the UI, as `lake sql`'s are.
        session = LakeSession(
            catalog, settings, lambda: spark.spark_session, changed=dagster_reporter(catalog)
        )

        banner("Step 1: the source table (demo/tables.sql)")
        run(session, (ROOT / "demo" / "tables.sql").read_text())
        banner("Step 2: connection, volumes, exports and the pipe (demo/pipeline.sql)")
        run(session, (ROOT / "demo" / "pipeline.sql").read_text().replace("${FILES}", str(files)))
        banner("Step 3: the dynamic table (demo/dynamic.sql)")
        run(session, (ROOT / "demo" / "dynamic.sql").read_text())

        banner("Table streams: the APPEND_ONLY and STANDARD examples (demo/streams.sql)")
        run(session, (ROOT / "demo" / "streams.sql").read_text())
        banner("Tasks on a stream of sales_ods and on a volume stream (demo/tasks.sql)")
        run(session, (ROOT / "demo" / "tasks.sql").read_text())

        banner(
            "Step 4: the Dagster daemon and its sensors (pipe, directories, streams, automation)"
        )
        with log.open("w") as output:
            daemon = spawn_daemon(dict(os.environ), output)
        for folder, query in BATCHES.items():
            land_batch(session, folder, query, log)
        banner("A schema change flows through: sales_ods gains a column, the next files carry it")
        run(session, f"{NEW_COLUMN}; DESC sales_ods")
        land_batch(session, "batch3/", WITH_CHANNEL, log)
        run(session, "SELECT channel, COUNT(*) AS orders FROM sales_ods GROUP BY channel")
        land_files(session, log)

        banner(
            "Refresh history, task history, the task's log, load history, the quarantine and "
            "the pipe"
        )
        run(
            session,
            "SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'sales_summary';"
            "DESC DYNAMIC TABLE sales_summary;"
            "SHOW TASK HISTORY;"
            "SELECT * FROM sales_ods_log ORDER BY id;"
            "SELECT * FROM load_history('sales_ods');"
            "SELECT id, product, amount, expectation, commit_version "
            "FROM quarantined_rows('sales_ods');"
            "DESC PIPE EXTENDED sales_pipe",
        )
        remaining = sorted(p.name for p in (files / "incoming").rglob("*") if p.is_file())
        print(f"files left in pipe_vol after PURGE: {remaining or 'none'}")
    finally:
        spark.teardown_after_execution(None)  # release the Connect session while the server is up
        if daemon is not None:
            daemon.stop()
        stop(server)


if __name__ == "__main__":
    main()
