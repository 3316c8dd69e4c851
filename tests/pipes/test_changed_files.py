"""A loaded file that changes is never skipped in silence: each change gets one SKIPPED_CHANGED
record (COPY, a pipe's run and DESC PIPE say so), and RELOAD_CHANGED = TRUE appends its new
content once per version of the file."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from logging import WARNING
from pathlib import Path

import pytest
from dagster import DagsterInstance

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.definitions import build_definitions
from lake_assets.pipes.copy_grammar import copy_of
from lake_assets.pipes.load_records import LoadRecord, LoadStatus, load_history, record_loads
from lake_assets.pipes.planning import CHANGED_SINCE_LOADED, plan_files, skip_changed
from lake_assets.session import LakeSession
from resources.storage import FileInfo
from tests.ingest_helpers import local_volume, message, properties, put, rows

COPY = "COPY INTO t FROM VOLUME v USING CSV"
NO_CHANGE = "COPY: 0 files loaded (0 rows), 0 failed, 0 purged"
SKIPPED = f"{NO_CHANGE}, 1 skipped: {CHANGED_SINCE_LOADED}"


def test_reload_changed_is_a_flag_of_copy_and_so_of_a_pipe() -> None:
    copy = copy_of(f"{COPY} PURGE = TRUE RELOAD_CHANGED = TRUE")
    assert (copy.purge, copy.force, copy.reload_changed) == (True, False, True)
    assert not copy_of(COPY).reload_changed
    with pytest.raises(LakeError, match="expected TRUE or FALSE for RELOAD_CHANGED"):
        copy_of(f"{COPY} RELOAD_CHANGED = maybe")


def test_each_change_of_a_loaded_file_is_recorded_once_and_loaded_only_when_asked(
    tmp_path: Path,
) -> None:
    """The rules themselves, without Spark: planning.plan_files decides them."""
    catalog = Catalog(tmp_path / "catalog.db")
    then = datetime.now(UTC) - timedelta(minutes=5)

    def info(name: str, size: int, minutes: float = 0) -> FileInfo:
        return FileInfo(name, size, then + timedelta(minutes=minutes), "e", f"file:///x/{name}")

    def copied(file: FileInfo) -> str:
        """When a load of `file` ran: a second after it was written."""
        return (file.last_modified + timedelta(seconds=1)).isoformat(timespec="milliseconds")

    def record(file: FileInfo, status: LoadStatus, version: int | None) -> LoadRecord:
        modified = file.last_modified.isoformat()
        return LoadRecord(
            file.url, copied(file), file.size, modified, status, 2, None, None, version
        )

    def plan(files: list[FileInfo], reload_changed: bool = False) -> tuple[list[str], list[str]]:
        found = plan_files(catalog, "t", files, 7.0, reload_changed=reload_changed)
        return [f.relative_path for f in found.news], [f.relative_path for f in found.pending]

    loaded, failed = info("a.csv", 8), info("bad.csv", 4)
    record_loads(catalog, "t", [record(loaded, LoadStatus.LOADED, 1)], None)
    record_loads(catalog, "t", [record(failed, LoadStatus.LOAD_FAILED, None)], None)
    assert plan([loaded, failed]) == ([], [])

    # Appended to: news for a run to record, not pending; recorded once, then quiet.
    grown = info("a.csv", 16, minutes=1)
    assert plan([grown]) == (["a.csv"], [])
    changes = plan_files(catalog, "t", [grown], 7.0).changed
    (skip,) = skip_changed(catalog, "t", changes, "p")
    assert (skip.status, skip.rows_loaded, skip.file_size, skip.pipe_name) == (
        "SKIPPED_CHANGED", 0, 16, "p",
    )  # fmt: skip
    assert skip.first_error_message.startswith(
        f"changed since it was loaded at {copied(loaded)} "
        "(8 bytes then, 16 now), so not loaded again; COPY with RELOAD_CHANGED = TRUE appends"
    )
    assert plan([grown]) == ([], [])
    (again,) = plan_files(catalog, "t", [grown], 7.0).changed
    assert again.recorded
    skip_changed(catalog, "t", [again], "p")  # a recorded change adds no record
    assert [r.status for r in load_history(catalog, "t")].count("SKIPPED_CHANGED") == 1
    # Changed again: a new change, a new record; a change still being written waits.
    assert plan([info("a.csv", 24, minutes=2)]) == (["a.csv"], [])
    assert plan([FileInfo("a.csv", 24, datetime.now(UTC), "e", loaded.url)]) == ([], [])

    # RELOAD_CHANGED loads the change; once its load is recorded, that version is done.
    assert plan([grown], reload_changed=True) == (["a.csv"], ["a.csv"])
    record_loads(catalog, "t", [record(grown, LoadStatus.LOADED, 2)], None)
    assert plan([grown], reload_changed=True) == ([], [])
    assert plan([grown]) == ([], [])

    # A failed file is still tried again once it changes, with or without RELOAD_CHANGED.
    fixed = info("bad.csv", 6, minutes=1)
    assert plan([fixed]) == (["bad.csv"], ["bad.csv"])


def test_copy_and_a_pipe_say_a_loaded_file_changed_and_reload_changed_appends_it(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql(f"CREATE TABLE t (id BIGINT, name STRING); CREATE PIPE p AS {COPY}")
    a = put(volume, "a.csv", "1,a\n2,b\n")
    assert message(lake, COPY) == (
        "COPY: 1 files loaded (2 rows), 0 failed, 0 purged; t is at version 1"
    )
    put(volume, "a.csv", "1,a\n2,b\n3,c\n4,d\n")  # appended to: a new size and time

    # The pipe's run records the change and warns of it; the file's rows are not loaded.
    with DagsterInstance.ephemeral() as instance:
        job = build_definitions(lake.settings).resolve_job_def("ingest_t_job")
        result = job.execute_in_process(instance=instance)
        assert result.success
        (event,) = result.get_asset_materialization_events()
        assert event.materialization.metadata["files_skipped_changed"].value == 1
        logged = [e.user_message for e in instance.all_logs(result.run_id) if e.level == WARNING]
    said = f"t: 1 file(s) skipped: {CHANGED_SINCE_LOADED}; first: {a.as_uri()}: changed since"
    assert any(said in line for line in logged)  # the run's log says it in yellow
    (skip,) = [r for r in load_history(lake.catalog, "t") if r.status == "SKIPPED_CHANGED"]
    assert (skip.file_path, skip.pipe_name, skip.commit_version) == (a.as_uri(), "p", None)
    assert rows(lake, "SELECT COUNT(*) FROM t") == [(2,)]

    # COPY says it each time, with one record for the change; DESC PIPE counts and shows it.
    assert message(lake, COPY) == SKIPPED
    assert len(load_history(lake.catalog, "t")) == 2
    described = properties(lake, "DESC PIPE p")
    assert (described["files_pending"], described["files_skipped_changed"]) == (0, 1)
    assert described["last_error"] == f"{a.as_uri()}: {skip.first_error_message}"

    # RELOAD_CHANGED appends the file's whole new content, once for this version of it.
    assert message(lake, f"{COPY} RELOAD_CHANGED = TRUE") == (
        "COPY: 1 files loaded (4 rows), 0 failed, 0 purged; t is at version 2"
    )
    assert message(lake, f"{COPY} RELOAD_CHANGED = TRUE") == NO_CHANGE
    assert message(lake, COPY) == NO_CHANGE
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (1,), (2,), (2,), (3,), (4,)]
    assert properties(lake, "DESC PIPE p")["files_skipped_changed"] == 0

    # A local file has no checksum: rewritten with its size and time kept, it is not seen.
    stat = a.stat()
    a.write_text("5,e\n6,f\n7,g\n8,h\n")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert message(lake, f"{COPY} RELOAD_CHANGED = TRUE") == NO_CHANGE
