"""`lake code-server`: a fingerprint of the catalog's object definitions only, and generations of
the code location served through one symlink; one that fails to load leaves the last one serving."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from lake_assets.code_server import LINK, catalog_fingerprint, spawn_code_server
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column, now_utc
from lake_assets.core.settings import LakeSettings
from lake_assets.daemon import ROOT
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.load_records import LoadRecord, record_loads
from lake_assets.session import LakeSession
from lake_assets.streams.entry import Claim, StreamEntry, StreamMode
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.entry import RunClaim, TaskEntry, TaskTrigger
from lake_assets.volumes.entry import VolumeEntry
from resources.spark_server import stop
from tests.pipes.test_defs import no_spark

PATIENCE_SECONDS = 300


@pytest.fixture
def lake(tmp_path: Path) -> LakeSession:
    """Connection c, volume v and table t as catalog entries: no JVM."""
    settings = LakeSettings(lake_home=tmp_path / "lake")
    session = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    session.sql("CREATE STORAGE CONNECTION c TYPE LOCAL")
    (tmp_path / "incoming").mkdir()
    location = f"{(tmp_path / 'incoming').as_uri()}/"
    session.catalog.add(
        VolumeEntry(name="v", created_at=now_utc(), location=location, connection="c")
    )
    session.catalog.add(TableEntry("t", str(settings.warehouse / "t-1"), (Column("id", "BIGINT"),)))
    return session


def test_the_fingerprint_follows_object_definitions_not_their_state(lake: LakeSession) -> None:
    catalog = lake.catalog
    start = catalog_fingerprint(catalog)
    table = catalog.get(TableEntry, "t")
    catalog.record_table_state(table, 3, 10)
    record = LoadRecord("file:///x.csv", now_utc(), 4, now_utc(), "LOADED", 1, None, None, 3)
    record_loads(catalog, "t", [record], 3)
    assert catalog_fingerprint(catalog) == start  # a commit changes no definition

    lake.sql("CREATE PIPE p AS COPY INTO t FROM VOLUME v USING CSV")
    created = catalog_fingerprint(catalog)
    assert created != start
    lake.sql("ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE")
    paused = catalog_fingerprint(catalog)
    assert paused not in (start, created)
    lake.sql("DROP PIPE p")
    assert catalog_fingerprint(catalog) == start


def test_consuming_a_stream_or_running_a_task_changes_no_definition(lake: LakeSession) -> None:
    """Offsets, claims and runs move with every consuming write; a reload for each would stall
    the sensors that wait on the code location."""
    catalog = lake.catalog
    location = catalog.get(TableEntry, "t").location
    catalog.add(StreamEntry("s", "t", "table", location, StreamMode.STANDARD, False, 0))
    catalog.add(TaskEntry("k", definition="INSERT INTO t SELECT id FROM s", streams=("s",)))
    start = catalog_fingerprint(catalog)
    claim = Claim("tag", "t", 0, 1, "owner")
    catalog.update(StreamEntry, "s", lambda e: replace(e, claim=claim))
    catalog.update(StreamEntry, "s", lambda e: replace(e, offset=1, generation=2, claim=None))
    run = RunClaim("run", "owner", TaskTrigger.MANUAL, now_utc(), {"s": 1})
    catalog.update(TaskEntry, "k", lambda e: replace(e, run=run))
    assert catalog_fingerprint(catalog) == start
    catalog.update(TaskEntry, "k", lambda e: replace(e, suspended=True))
    assert catalog_fingerprint(catalog) != start  # SUSPEND is a definition: the asset's condition


def wait_until(what: str, done: Callable[[], bool], log: Path) -> None:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not done():
        assert time.monotonic() < deadline, f"{what} did not happen; log:\n{log.read_text()}"
        time.sleep(0.5)


def answers(socket: Path) -> bool:
    dagster = Path(sys.executable).with_name("dagster")
    checked = subprocess.run(
        [str(dagster), "api", "grpc-health-check", "--socket", str(socket)],
        capture_output=True,
        check=False,
    )
    return checked.returncode == 0


def start_code_server(lake: LakeSession, tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    """`lake code-server` on the lake, with a Dagster home of its own: process, workspace, log."""
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", dagster_home)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "LAKE_HOME": str(lake.settings.lake_home),
    }
    log = tmp_path / "code-server.log"
    with log.open("wb") as output:
        process, workspace = spawn_code_server(env, output)
    return process, workspace, log


@pytest.mark.slow
def test_a_generation_that_fails_to_load_leaves_the_last_one_serving(
    lake: LakeSession, tmp_path: Path
) -> None:
    process, workspace, log = start_code_server(lake, tmp_path)
    try:
        link = Path(workspace.read_text().split("socket: ")[1].split()[0])
        assert link.name == LINK
        first = link.resolve()
        assert answers(link)

        # A pipe named like the volumes sensor (CREATE PIPE refuses the name; an entry written
        # straight into the catalog does not): Dagster refuses the duplicate name.
        lake.catalog.add(
            PipeEntry(
                "lake_volumes",
                volume="v",
                table="t",
                copy_statement="COPY INTO t FROM VOLUME v USING CSV",
            )
        )
        wait_until("the failed load", lambda: "still serving generation 1" in log.read_text(), log)
        (failure,) = [line for line in log.read_text().splitlines() if "still serving" in line]
        assert "Duplicate definition found for lake_volumes" in failure
        assert link.resolve() == first
        assert answers(link)

        lake.sql("DROP PIPE lake_volumes")
        wait_until("the next generation", lambda: link.resolve() != first, log)
        assert answers(link)
        wait_until("the first generation's exit", lambda: not first.exists(), log)
    finally:
        stop(process)
    assert process.returncode == 0
    assert not workspace.exists()
    assert not link.parent.exists()


@pytest.mark.slow
def test_ctrl_c_then_the_supervisors_sigterm_still_leave_nothing_behind(
    lake: LakeSession, tmp_path: Path
) -> None:
    """`make dev` stopped with Ctrl-C: the terminal's SIGINT reaches the code server, and the
    supervisor's SIGTERM follows while it cleans up; no workspace naming a dead socket is left,
    nor its temporary directory."""
    process, workspace, log = start_code_server(lake, tmp_path)
    link = Path(workspace.read_text().split("socket: ")[1].split()[0])
    assert answers(link)
    process.send_signal(signal.SIGINT)
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0, log.read_text()
    assert not workspace.exists()
    assert not link.parent.exists()
