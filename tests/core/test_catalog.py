"""The catalog on SQLite and on Postgres, in one process: table registration, properties, commit
state, and a whole session with its catalog in Postgres."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog, CatalogView
from lake_assets.core.database import WRITE_LOCK
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.entry import PipeEntry
from lake_assets.session import LakeSession
from lake_assets.streams.entry import Landing
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.entry import TaskEntry
from lake_assets.volumes.entry import VolumeEntry
from resources.spark_server import free_port
from tests.core.catalog_helpers import COLUMNS, entry
from tests.postgres_server import new_database


@pytest.fixture
def catalog(location: str) -> Catalog:
    return Catalog(location)


# One process


def test_a_new_catalog_creates_its_directory_and_is_empty(tmp_path):
    path = tmp_path / "not" / "yet" / "there" / "catalog.db"
    catalog = Catalog(path)
    assert path.is_file()
    assert catalog.entries(TableEntry) == []


def test_an_unreachable_catalog_database_is_one_clear_error_without_its_password():
    url = f"postgresql+psycopg://lake:s3cret@127.0.0.1:{free_port()}/lake"
    with pytest.raises(LakeError) as caught:
        Catalog(url)
    assert caught.value.what.startswith("cannot open the catalog database postgresql+psycopg://")
    assert "127.0.0.1" in caught.value.what
    assert "LAKE_CATALOG_URL" in caught.value.fix
    assert "s3cret" not in str(caught.value)


def test_added_table_can_be_found_with_all_its_fields(catalog):
    added = catalog.add(entry("sales", comment="Sales", properties={"owner": "ops"}))
    found = catalog.find(TableEntry, "sales")
    assert found == added
    assert found.location == "/warehouse/sales-abc"
    assert found.columns == COLUMNS
    assert found.comment == "Sales"
    assert found.properties == {"owner": "ops"}
    assert found.created_at.endswith("+00:00")
    assert (found.version, found.row_count) == (None, None)


def test_find_table_of_an_unknown_name_is_none(catalog):
    assert catalog.find(TableEntry, "nope") is None


def test_table_of_an_unknown_name_says_how_to_find_names(catalog):
    with pytest.raises(LakeError) as caught:
        catalog.get(TableEntry, "nope")
    assert caught.value.what == "table nope does not exist"
    assert "SHOW TABLES" in caught.value.fix
    assert "CREATE TABLE" in caught.value.fix


def test_adding_an_existing_name_fails(catalog):
    catalog.add(entry("sales"))
    with pytest.raises(LakeError) as caught:
        catalog.add(entry("sales", comment="another"))
    assert caught.value.what == "table sales already exists"
    assert "IF NOT EXISTS" in caught.value.fix
    assert catalog.get(TableEntry, "sales").comment is None


def test_tables_are_listed_by_name(catalog):
    for name in ("orders", "customers", "sales"):
        catalog.add(entry(name))
    assert [table.name for table in catalog.entries(TableEntry)] == ["customers", "orders", "sales"]


def test_remove_table_returns_what_it_was(catalog):
    added = catalog.add(entry("sales"))
    assert catalog.remove(TableEntry, "sales") == added
    assert catalog.find(TableEntry, "sales") is None
    assert catalog.entries(TableEntry) == []


def test_remove_of_an_unknown_table_is_none(catalog):
    assert catalog.remove(TableEntry, "nope") is None


def test_a_removed_name_can_be_added_again(catalog):
    catalog.add(entry("sales"))
    catalog.remove(TableEntry, "sales")
    catalog.add(entry("sales", comment="second"))
    assert catalog.get(TableEntry, "sales").comment == "second"


def _rival_may_write(location: str) -> bool:
    """Whether another connection could start writing right now: it takes the writers' lock
    without waiting (SQLite: BEGIN IMMEDIATE with no busy timeout; Postgres: a try of the
    advisory lock), and lets it go at once."""
    if "://" not in location:
        conn = sqlite3.connect(location, timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            return False
        finally:
            conn.close()
        return True
    engine = sa.create_engine(location, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn, conn.begin():
            return bool(
                conn.execute(sa.select(sa.func.pg_try_advisory_xact_lock(WRITE_LOCK))).scalar()
            )
    finally:
        engine.dispose()


def _writes(table: str) -> tuple[PipeEntry, TaskEntry]:
    """A pipe that loads `table` and a task that inserts into it."""
    pipe = PipeEntry("p", volume="v", table=table, copy_statement=f"COPY INTO {table} …")
    task = TaskEntry("k", definition=f"DELETE FROM {table}", target=table)
    return pipe, task


def test_remove_unused_refuses_while_a_pipe_or_a_task_writes_the_table(catalog):
    catalog.add(entry("sales"))
    pipe, task = _writes("sales")
    catalog.add(pipe)
    with pytest.raises(LakeError, match=r"^table sales is used by pipe p — drop pipe p first$"):
        catalog.remove(TableEntry, "sales", unused=True)
    catalog.remove(PipeEntry, "p")
    catalog.add(task)
    with pytest.raises(LakeError, match=r"^table sales is used by task k — drop task k first$"):
        catalog.remove(TableEntry, "sales", unused=True)
    assert catalog.find(TableEntry, "sales") is not None
    catalog.remove(TaskEntry, "k")
    assert catalog.remove(TableEntry, "sales", unused=True) is not None


def test_a_task_that_exports_to_a_volume_uses_the_volume_not_a_table_of_that_name(catalog):
    catalog.add(entry("out"))
    catalog.add(VolumeEntry("out", location="file:///tmp/out/", connection="c"))
    export = TaskEntry(
        "k", definition="COPY INTO VOLUME out …", target="out", lands_in=Landing.VOLUME
    )
    catalog.add(export)
    assert catalog.get(TaskEntry, "k") == replace(
        export, created_at=catalog.get(TaskEntry, "k").created_at
    )
    assert catalog.users_of(VolumeEntry, "out") == ["task k"]
    assert catalog.users_of(TableEntry, "out") == []


def test_remove_checks_its_users_while_no_one_else_may_write(catalog, location, monkeypatch):
    """The check and the removal are one transaction: while DROP looks for users, no other
    writer can add one."""
    catalog.add(entry("sales"))
    seen = []
    users_of = CatalogView.users_of

    def looking(view: CatalogView, kind: type, name: str) -> list[str]:
        seen.append(_rival_may_write(location))
        return users_of(view, kind, name)

    monkeypatch.setattr(CatalogView, "users_of", looking)
    assert catalog.remove(TableEntry, "sales", unused=True) is not None
    assert seen == [False]
    assert _rival_may_write(location)


def test_add_and_replace_run_their_check_inside_their_transaction(catalog, location):
    catalog.add(entry("orders"))
    seen = []

    def check(view: CatalogView) -> None:
        seen.append((_rival_may_write(location), [t.name for t in view.entries(TableEntry)]))

    catalog.add(entry("sales"), check)
    catalog.replace(entry("sales", comment="again"), check)
    assert seen == [(False, ["orders"]), (False, ["orders", "sales"])]

    def refuse(view: CatalogView) -> None:
        raise LakeError("refused", "by the check")

    with pytest.raises(LakeError, match="refused"):
        catalog.add(entry("customers"), refuse)
    with pytest.raises(LakeError, match="refused"):
        catalog.replace(entry("sales", comment="third"), refuse)
    assert [(t.name, t.comment) for t in catalog.entries(TableEntry)] == [
        ("orders", None),
        ("sales", "again"),
    ]


def merged(properties):
    return lambda table: replace(table, properties={**table.properties, **properties})


def test_update_sees_the_entry_as_it_is_now(catalog):
    catalog.add(entry("sales", properties={"owner": "ops", "change_tracking": "false"}))
    updated = catalog.update(TableEntry, "sales", merged({"change_tracking": "true"}))
    assert updated.properties == {"owner": "ops", "change_tracking": "true"}
    assert catalog.get(TableEntry, "sales").properties == {
        "owner": "ops",
        "change_tracking": "true",
    }
    assert catalog.get(TableEntry, "sales").change_tracking is True


def test_update_of_an_unknown_table_fails(catalog):
    with pytest.raises(LakeError, match="table nope does not exist"):
        catalog.update(TableEntry, "nope", merged({"change_tracking": "true"}))


@pytest.mark.parametrize(
    ("properties", "expected"),
    [({}, False), ({"change_tracking": "TRUE"}, True), ({"change_tracking": "no"}, False)],
)
def test_change_tracking_reads_the_property(properties, expected):
    assert entry("t", properties=properties).change_tracking is expected


def test_record_table_state_shows_on_the_table(catalog):
    catalog.add(entry("sales"))
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 0, 0)
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 3, 42)
    table = catalog.get(TableEntry, "sales")
    assert (table.version, table.row_count) == (3, 42)
    assert [(t.version, t.row_count) for t in catalog.entries(TableEntry)] == [(3, 42)]


def test_an_older_version_never_overwrites_a_newer_one(catalog):
    catalog.add(entry("sales"))
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 5, 50)
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 4, 40)
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 5, 999)
    table = catalog.get(TableEntry, "sales")
    assert (table.version, table.row_count) == (5, 50)


def test_removing_a_table_forgets_its_state(catalog):
    catalog.add(entry("sales"))
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 7, 70)
    catalog.remove(TableEntry, "sales")
    catalog.add(entry("sales"))
    catalog.record_table_state(catalog.get(TableEntry, "sales"), 0, 0)
    table = catalog.get(TableEntry, "sales")
    assert (table.version, table.row_count) == (0, 0)


def test_a_late_commit_of_a_dropped_table_does_not_stick_to_a_new_table_of_that_name(catalog):
    dropped = catalog.add(entry("sales"))
    catalog.record_table_state(dropped, 5, 50)
    catalog.remove(TableEntry, "sales")
    catalog.record_table_state(dropped, 6, 60)  # a writer that committed just before the DROP
    recreated = catalog.add(entry("sales", location="/warehouse/sales-new"))
    catalog.record_table_state(dropped, 7, 70)  # ... or whose record lands after the re-CREATE
    catalog.record_table_state(recreated, 0, 0)  # what CREATE TABLE records
    table = catalog.get(TableEntry, "sales")
    assert (table.version, table.row_count) == (0, 0)


def test_names_list_in_the_same_order_on_sqlite_and_on_a_postgres_of_another_collation(
    tmp_path, postgres_url
):
    names = ("a", "B", "ab", "a_b", "b")
    orders = []
    for location in (tmp_path / "catalog.db", new_database(postgres_url, icu_locale="en-US")):
        catalog = Catalog(location)
        for name in names:
            catalog.add(entry(name))
        orders.append([table.name for table in catalog.entries(TableEntry)])
    assert orders == [["B", "a", "a_b", "ab", "b"]] * 2


def test_a_second_catalog_on_the_same_database_sees_everything(location):
    first = Catalog(location)
    first.add(entry("sales", comment="Sales", properties={"change_tracking": "true"}))
    first.add(entry("orders"))
    first.record_table_state(first.get(TableEntry, "sales"), 2, 20)
    first.remove(TableEntry, "orders")

    restarted = Catalog(location)
    assert [table.name for table in restarted.entries(TableEntry)] == ["sales"]
    sales = restarted.get(TableEntry, "sales")
    assert sales == first.get(TableEntry, "sales")
    assert (sales.comment, sales.change_tracking, sales.version, sales.row_count) == (
        "Sales",
        True,
        2,
        20,
    )


# A whole session on a Postgres catalog


def test_a_session_with_its_catalog_in_postgres_creates_inserts_selects_and_shows(
    spark: SparkSession, postgres_url: str, tmp_path: Path
):
    url = new_database(postgres_url)
    settings = LakeSettings(lake_home=tmp_path, catalog_url=url)
    lake = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)

    lake.sql("CREATE TABLE orders (id BIGINT COMMENT 'Order ID', amount DECIMAL(10,2))")
    (inserted,) = lake.sql("INSERT INTO orders VALUES (1, 9.50), (2, 20.00)")
    (selected,) = lake.sql("SELECT id, amount FROM orders ORDER BY id")
    (shown,) = lake.sql("SHOW TABLES")

    assert "orders is at version 1 with 2 rows" in inserted.message
    assert [(row[0], str(row[1])) for row in selected.rows] == [(1, "9.50"), (2, "20.00")]
    (row,) = shown.rows
    assert row[:7] == ("orders", "TABLE", False, False, None, 2, 1)
    assert not settings.catalog_path.exists()  # no SQLite file: the catalog is in Postgres
    reopened = Catalog(url).get(TableEntry, "orders")
    assert (reopened.version, reopened.row_count) == (1, 2)
    assert reopened.columns[0] == Column("id", "BIGINT", "Order ID")
