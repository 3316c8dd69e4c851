"""ALTER TABLE t RENAME TO u: the catalog's move of the table with what it keeps under its name
(without Spark), and the same table read, loaded and streamed under its new name (with Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.lake_session import LakeSession
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.load_records import LoadRecord, LoadStatus, load_history, record_loads
from lake_assets.streams.entry import StreamEntry, StreamMode
from lake_assets.tables.alterations import RenameTable
from lake_assets.tables.entry import TableEntry
from tests.core.catalog_helpers import entry
from tests.ingest_helpers import local_volume, message, put, refused, rows

LOADED = LoadRecord("file:/in/a.csv", "2026-01-01", 6, None, LoadStatus.LOADED, 1, None, None, 1)


def stream_on(table: str) -> StreamEntry:
    return StreamEntry(
        "s", source=table, source_kind="table", source_location=f"/warehouse/{table}-abc",
        mode=StreamMode.STANDARD, show_initial_rows=False, offset=3,
    )  # fmt: skip


def test_rename_to_names_a_new_table_and_rename_column_still_means_a_column() -> None:
    assert parse_statement("ALTER TABLE t RENAME TO u") == RenameTable("t", "u")
    assert parse_statement("alter table t rename column to to u") != RenameTable("t", "u")
    with pytest.raises(LakeError) as caught:
        parse_statement("ALTER TABLE t RENAME TO `a/b`")
    assert "a/b" in str(caught.value)


def test_a_renamed_table_keeps_its_location_state_load_history_and_streams(
    tmp_path: Path,
) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(entry("t"))
    catalog.add(stream_on("t"))
    catalog.record_table_state(catalog.get(TableEntry, "t"), 4, 10)
    record_loads(catalog, "t", [LOADED], 1)

    renamed = catalog.rename(TableEntry, "t", "u")

    assert catalog.find(TableEntry, "t") is None
    assert catalog.get(TableEntry, "u") == renamed
    assert (renamed.location, renamed.version, renamed.row_count) == ("/warehouse/t-abc", 4, 10)
    assert load_history(catalog, "u") == [LOADED]
    assert load_history(catalog, "t") == []
    stream = catalog.get(StreamEntry, "s")
    assert (stream.source, stream.offset) == ("u", 3)


def test_a_rename_is_refused_while_another_object_names_the_table_or_the_name_is_taken(
    tmp_path: Path,
) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(entry("t"))
    catalog.add(entry("other"))
    catalog.add(PipeEntry("p", volume="v", table="t", copy_statement="COPY INTO t …"))
    with pytest.raises(LakeError) as used:
        catalog.rename(TableEntry, "t", "u")
    assert str(used.value) == (
        "table t is used by pipe p, which names it — drop pipe p, rename, then create it again "
        "naming u"
    )
    with pytest.raises(LakeError) as taken:
        catalog.rename(TableEntry, "other", "t")
    assert str(taken.value) == "table t already exists — pick another name, or DROP it first"
    assert {e.name for e in catalog.entries(TableEntry)} == {"t", "other"}


def test_a_renamed_table_is_read_loaded_and_streamed_under_its_new_name(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "landing")
    put(volume, "a.csv", "1,10\n")
    lake.sql(
        "CREATE TABLE t (id INT, a INT);"
        "COPY INTO t FROM VOLUME v USING CSV;"
        "CREATE STREAM s ON TABLE t;"
        "CREATE DYNAMIC TABLE d AS SELECT SUM(a) AS total FROM t"
    )
    assert refused(lake, "ALTER TABLE t RENAME TO u") == (
        "table t is used by dynamic table d, which names it — drop dynamic table d, rename, then "
        "create it again naming u"
    )
    assert refused(lake, "ALTER TABLE d RENAME TO u").startswith(
        "d is a dynamic table: only a table is renamed"
    )
    lake.sql("DROP DYNAMIC TABLE d")
    assert message(lake, "ALTER TABLE t RENAME TO u") == "renamed table t to u"

    put(volume, "b.csv", "2,20\n")
    lake.sql("COPY INTO u FROM VOLUME v USING CSV")  # a.csv is loaded already, under either name
    assert rows(lake, "SELECT id, a FROM u ORDER BY id") == [(1, 10), (2, 20)]
    assert rows(lake, "SELECT id, a FROM s") == [(2, 20)]  # the stream kept its offset
    assert [r.status for r in load_history(lake.catalog, "u")] == ["LOADED", "LOADED"]
    assert refused(lake, "SELECT * FROM t").startswith("table t does not exist")
    lake.sql("CREATE TABLE t (id INT)")  # the old name is free, with a Delta table of its own
    assert rows(lake, "SELECT COUNT(*) FROM t") == [(0,)]


def test_what_a_racing_writer_left_under_a_name_is_not_the_next_tables(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(entry("t"))
    catalog.rename(TableEntry, "t", "u")
    record_loads(catalog, "t", [LOADED], 1)  # a COPY that began before the rename records late
    record_loads(catalog, "v", [LOADED], 1)
    catalog.add(entry("t"))  # a new table of the old name loads the file again
    assert load_history(catalog, "t") == []
    catalog.rename(TableEntry, "u", "v")
    assert load_history(catalog, "v") == []
