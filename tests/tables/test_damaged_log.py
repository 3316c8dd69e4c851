"""Writes on real Delta tables whose log lost or damaged commits the catalog saw: refused in one
line before anything is committed, so no version is written on a damaged one or reused."""

from __future__ import annotations

from pathlib import Path

from lake_assets.core.delta import log_versions
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import local_volume, put, refused


def commit_file(location: str, version: int) -> Path:
    return Path(location, "_delta_log", f"{version:020d}.json")


def test_an_insert_on_a_half_written_newest_commit_is_refused(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (id INT); INSERT INTO t VALUES (1)")
    location = lake.catalog.get(TableEntry, "t").location
    newest = commit_file(location, 1)
    first_line = newest.read_text().splitlines()[0]
    newest.write_text(first_line[: len(first_line) // 2])

    assert refused(lake, "INSERT INTO t VALUES (2)") == (
        f"table t's commit at version 1 is damaged: it does not parse — restore {newest} from a "
        "backup before reading or writing t again"
    )
    assert log_versions(location) == [1, 0]


def test_an_insert_after_the_newest_commit_was_deleted_reuses_no_version(
    lake: LakeSession,
) -> None:
    lake.sql("CREATE TABLE t (id INT); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")
    location = lake.catalog.get(TableEntry, "t").location
    commit_file(location, 2).unlink()

    assert refused(lake, "INSERT INTO t VALUES (3)").startswith(
        "table t's log ends at version 1 but version 2 was committed: its newest commits are "
        f"missing — restore {commit_file(location, 2)} from a backup"
    )
    assert log_versions(location) == [1, 0]
    assert lake.catalog.get(TableEntry, "t").version == 2


def test_a_load_and_a_refresh_are_refused_as_an_insert_is(
    lake: LakeSession, tmp_path: Path
) -> None:
    landing = local_volume(lake, tmp_path / "landing")
    put(landing, "a.csv", "1\n")
    lake.sql(
        "CREATE TABLE t (id INT); INSERT INTO t VALUES (1);"
        "CREATE DYNAMIC TABLE d REFRESH_MODE = FULL AS SELECT id FROM t"
    )
    table = lake.catalog.get(TableEntry, "t").location
    # The catalog saw version 1; turning on t's change feed for d committed version 2.
    commit_file(table, 1).unlink()
    assert refused(lake, "COPY INTO t FROM VOLUME v USING CSV").startswith(
        "table t's log lacks version 1 (its newest is 2): a commit is missing"
    )
    assert log_versions(table) == [2, 0]

    entry = lake.catalog.get(DynamicTableEntry, "d")
    assert entry.version is not None
    commit_file(entry.location, entry.version).write_text("{")
    assert refused(lake, "REFRESH DYNAMIC TABLE d").startswith(
        f"dynamic table d's commit at version {entry.version} is damaged: it does not parse"
    )
    assert log_versions(entry.location) == list(range(entry.version, -1, -1))
