"""The catalog's database when another process holds its write lock or its file is damaged:
reads go on, a writer gives up after LAKE_CATALOG_LOCK_WAIT naming the holder, and a damaged
file is one line through `lake sql` and `lake catalog check`. No Spark."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from lake_assets.core.catalog import Catalog
from lake_assets.core.catalog_file import integrity_problems
from lake_assets.core.database import WRITE_LOCK
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import DEFAULT_CATALOG_LOCK_WAIT, LakeSettings, catalog_lock_wait
from lake_assets.pipes.load_records import load_history
from lake_assets.tables.entry import TableEntry
from tests.postgres_server import new_database
from tests.test_cli import lake

# Another process: it takes the catalog's write lock, says so, and keeps it until it is killed.
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(3600)
"""
COLUMNS = (Column("id", "BIGINT"), Column("amount", "DECIMAL(10,2)"))
# A writer's wait in these tests, so that a held lock fails it at once.
SHORT_WAIT = "0.2"


def table(name: str) -> TableEntry:
    return TableEntry(name, location=f"/warehouse/{name}-abc", columns=COLUMNS, comment="x" * 200)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A lake home whose catalog has a table, sales."""
    Catalog(tmp_path / "catalog.db").add(table("sales"))
    return tmp_path


@pytest.fixture
def holder(home: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process holding the write lock of `home`'s catalog until the test ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home / "catalog.db")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "holding\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_lake_sql_reads_while_another_process_holds_the_write_lock_and_a_write_names_it(
    home, holder, monkeypatch
):
    monkeypatch.setenv("LAKE_CATALOG_LOCK_WAIT", SHORT_WAIT)
    ran = lake(
        home, "sql", "--format", "csv", "-e",
        "SHOW TABLES; DESC TABLE sales; ALTER TABLE sales SET PRIMARY KEY (id)",
    )  # fmt: skip
    assert ran.returncode == 1
    assert ran.stdout.splitlines()[1].startswith("sales,TABLE,")
    assert "id,BIGINT,,,\n" in ran.stdout
    (line,) = ran.stderr.splitlines()
    assert line.startswith(
        f"error: statement 3: the catalog {home / 'catalog.db'} is busy: another process holds "
        f"its write lock (pid {holder.pid}: {sys.executable} -c "
    )
    assert f"did not release it within {SHORT_WAIT} s — wait for that process to finish" in line
    assert line.endswith("(LAKE_CATALOG_LOCK_WAIT sets how many seconds a writer waits)")


def test_a_writer_gives_up_naming_the_holder_and_writes_nothing(home, holder, monkeypatch):
    monkeypatch.setenv("LAKE_CATALOG_LOCK_WAIT", SHORT_WAIT)
    catalog = Catalog(home / "catalog.db")
    with pytest.raises(LakeError) as caught:
        catalog.add(table("orders"))
    assert "another process holds its write lock" in caught.value.what
    assert f"(pid {holder.pid}: " in caught.value.what
    assert "\n" not in str(caught.value)
    assert [entry.name for entry in catalog.entries(TableEntry)] == ["sales"]
    holder.kill()
    holder.wait()
    catalog.add(table("orders"))
    assert [entry.name for entry in catalog.entries(TableEntry)] == ["orders", "sales"]


def test_a_writer_on_postgres_gives_up_naming_the_session_that_holds_the_lock(
    postgres_url, monkeypatch
):
    location = new_database(postgres_url)
    Catalog(location).add(table("sales"))
    monkeypatch.setenv("LAKE_CATALOG_LOCK_WAIT", SHORT_WAIT)
    catalog = Catalog(location)
    rival = sa.create_engine(location, poolclass=sa.pool.NullPool)
    try:
        with rival.connect() as conn, conn.begin():
            pid = conn.execute(sa.select(sa.func.pg_backend_pid())).scalar()
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(WRITE_LOCK)))
            assert [entry.name for entry in catalog.entries(TableEntry)] == ["sales"]
            with pytest.raises(LakeError) as caught:
                catalog.add(table("orders"))
    finally:
        rival.dispose()
    assert "is busy: another session holds its write lock (server pid " in caught.value.what
    assert f"server pid {pid}, " in caught.value.what
    assert "LAKE_CATALOG_LOCK_WAIT" in caught.value.fix
    catalog.add(table("orders"))


@pytest.mark.parametrize("text", ["soon", "-1", "nan", "inf"])
def test_a_lock_wait_that_is_not_a_number_of_seconds_is_refused(text):
    with pytest.raises(LakeError, match=rf"^LAKE_CATALOG_LOCK_WAIT '{text}' is not a number"):
        catalog_lock_wait({"LAKE_CATALOG_LOCK_WAIT": text})


def test_the_lock_wait_is_30_seconds_unless_set():
    assert catalog_lock_wait({}) == DEFAULT_CATALOG_LOCK_WAIT == 30
    assert catalog_lock_wait({"LAKE_CATALOG_LOCK_WAIT": " 2.5 "}) == 2.5


def _overwrite(path: Path, first_page: int, pages: int | None = None) -> None:
    """Junk over whole pages of a SQLite file from `first_page` (1-based), to its end if no
    count is given."""
    assert not Path(f"{path}-wal").exists()  # every change is in the file itself
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    size = path.stat().st_size
    start = (first_page - 1) * page_size
    end = size if pages is None else start + pages * page_size
    with path.open("r+b") as file:
        file.seek(start)
        file.write(b"\xde\xad\xbe\xef" * ((end - start) // 4))


@pytest.fixture
def damaged_home(home: Path) -> Path:
    """A lake home whose catalog's pages after its first are junk."""
    catalog = Catalog(home / "catalog.db")
    for number in range(30):
        catalog.add(table(f"t{number}"))
    _overwrite(home / "catalog.db", first_page=2)
    return home


@pytest.mark.slow
def test_a_damaged_catalog_is_one_line_through_lake_sql(damaged_home):
    path = damaged_home / "catalog.db"
    ran = lake(damaged_home, "sql", "-e", "SHOW TABLES")
    assert ran.returncode == 1
    assert ran.stdout == ""
    (line,) = ran.stderr.splitlines()
    assert line.startswith(
        f"error: statement 1: the catalog {path} is damaged (database disk image is malformed) — "
        "restore the file from a backup, or salvage what SQLite can still read"
    )


@pytest.mark.slow
def test_catalog_check_lists_the_damage_and_exits_1(damaged_home):
    checked = lake(damaged_home, "catalog", "check")
    assert checked.returncode == 1
    assert checked.stdout.strip() != ""
    assert "ok" not in checked.stdout.splitlines()
    (line,) = checked.stderr.splitlines()
    assert line.startswith(f"error: the catalog {damaged_home / 'catalog.db'} is damaged")


def test_an_intact_catalog_has_no_problems(home):
    assert integrity_problems(LakeSettings(lake_home=home)) == []


def test_a_catalog_whose_first_page_is_junk_is_not_a_database(home):
    _overwrite(home / "catalog.db", first_page=1, pages=1)
    assert integrity_problems(LakeSettings(lake_home=home)) == ["file is not a database"]
    with pytest.raises(LakeError, match=r"is damaged \(file is not a database\) — restore"):
        Catalog(home / "catalog.db").entries(TableEntry)


def test_catalog_check_says_a_missing_catalog_and_a_server_database_are_not_its_to_check(
    tmp_path,
):
    with pytest.raises(LakeError, match=r"^there is no catalog at "):
        integrity_problems(LakeSettings(lake_home=tmp_path))
    server = LakeSettings(lake_home=tmp_path, catalog_url="postgresql+psycopg://lake@db/lake")
    with pytest.raises(LakeError, match="not a SQLite file"):
        integrity_problems(server)


def test_a_column_declared_after_the_catalog_was_made_is_added_to_it(tmp_path: Path) -> None:
    """A catalog made by an older release: its load_history lacks rows_rejected."""
    path = tmp_path / "catalog.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE load_history (table_name TEXT NOT NULL, file_path TEXT NOT NULL, "
            "last_copy_time TEXT NOT NULL, file_size BIGINT, file_modified TEXT, status TEXT NOT "
            "NULL, rows_loaded BIGINT NOT NULL, first_error_message TEXT, pipe_name TEXT, "
            "commit_version BIGINT)"
        )
        conn.execute(
            "INSERT INTO load_history (table_name, file_path, last_copy_time, status, "
            "rows_loaded) VALUES ('t', 'a.csv', '2026-01-01', 'LOADED', 2)"
        )
    [record] = load_history(Catalog(path), "t")
    assert (record.rows_loaded, record.rows_rejected) == (2, 0)
