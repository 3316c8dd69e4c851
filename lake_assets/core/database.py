"""The catalog's database: SQLite under LAKE_HOME (WAL mode) or any database SQLAlchemy reaches (a
shared Postgres), one schema that every kind adds its own tables to, and one writer at a time.

A kind keeps its history (load records, refreshes, task runs, Kafka batches) in tables it
declares with `owned_table`, naming the objects whose rows they hold, so that dropping an object
drops its rows in the same transaction without the catalog knowing the kind."""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import SchemaItem

from lake_assets.core.errors import LakeError

# How long a writer waits for another process's transaction before giving up.
_LOCK_WAIT_SECONDS = 30
# Postgres: the advisory lock every writing transaction (and the schema's creation) holds, so
# that writers take turns as they do on SQLite's one file ("lake" in ASCII).
WRITE_LOCK = 0x6C616B65

# Text compares byte by byte on Postgres too, as on SQLite: names list in one order and ISO
# times compare as written, whatever collation the database was created with.
TEXT = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")

SCHEMA = sa.MetaData()


@dataclass(frozen=True)
class Owned:
    """A kind's table whose rows belong to the object named in `column` of `namespace`."""

    table: sa.Table
    namespace: str
    column: str


_OWNED: list[Owned] = []
# How many of the schema's tables each database (by URL) has been given in this process.
_CREATED: dict[str, int] = {}


def owned_table(name: str, owner: tuple[str, str] | None, *columns: SchemaItem) -> sa.Table:
    """Declare a table of the catalog's database; `owner` is (namespace, column): dropping or
    replacing the object that holds the column's name in that namespace deletes its rows."""
    table = sa.Table(name, SCHEMA, *columns)
    if owner is not None:
        _OWNED.append(Owned(table, *owner))
    return table


def owned_in(namespace: str) -> list[Owned]:
    return [owned for owned in _OWNED if owned.namespace == namespace]


def catalog_url(location: Path | str) -> str:
    """A database URL as given, or the SQLite file at a path."""
    text = str(location)
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"


class Database:
    """One database, shared by every process: reads see one transaction, writers take turns."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine = _engine(url)

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        self._create_new_tables()
        with self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """One writer at a time (SQLite: BEGIN IMMEDIATE; Postgres: an advisory lock), so a
        transaction's reads still hold when it writes: two processes adding one name, or
        replacing one object, never both pass the check."""
        self._create_new_tables()
        with self._engine.connect().execution_options(lake_write=True) as conn, conn.begin():
            _take_write_lock(conn)
            yield conn

    @property
    def insert(self) -> Callable[[sa.Table], Any]:
        """The dialect's INSERT, for ON CONFLICT clauses (SQLite and Postgres spell them alike)."""
        return (postgresql if self._engine.dialect.name == "postgresql" else sqlite).insert

    def _create_new_tables(self) -> None:
        """Tables declared since the last use (a kind imported late) are created once."""
        if _CREATED.get(self.url) == len(SCHEMA.tables):
            return
        with self._engine.connect().execution_options(lake_write=True) as conn, conn.begin():
            # Processes opening a new database at once: one creates the tables, the others wait.
            _take_write_lock(conn)
            SCHEMA.create_all(conn)
        _CREATED[self.url] = len(SCHEMA.tables)


@functools.cache
def _engine(url: str) -> Engine:
    """One engine per database and process; a new SQLite file gets WAL mode."""
    if not url.startswith("sqlite"):
        engine = sa.create_engine(url, pool_pre_ping=True)
        try:
            with engine.connect():
                pass
        except sa.exc.OperationalError as error:
            reason = str(error.orig).strip().splitlines()[0]
            raise LakeError(
                f"cannot open the catalog database {engine.url!r}: {reason}",
                "check LAKE_CATALOG_URL (host, port, user, password, database) and that the "
                "database server is running",
            ) from None
        return engine
    Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    # No pool: a connection per use, as many processes share the file (sensors, runs, the CLI).
    engine = sa.create_engine(
        url, connect_args={"timeout": _LOCK_WAIT_SECONDS}, poolclass=sa.pool.NullPool
    )
    sa.event.listen(engine, "connect", _sqlite_autocommit)
    sa.event.listen(engine, "begin", _sqlite_begin)
    raw = engine.raw_connection()
    try:
        _use_wal(raw)
    finally:
        raw.close()
    return engine


def _sqlite_autocommit(dbapi_connection: Any, record: Any) -> None:
    """Let SQLAlchemy, not the sqlite3 module, say when a transaction begins."""
    dbapi_connection.isolation_level = None


def _sqlite_begin(conn: Connection) -> None:
    """Writers take the write lock up front: two read-then-write transactions never deadlock."""
    immediate = conn.get_execution_options().get("lake_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _take_write_lock(conn: Connection) -> None:
    """Postgres: wait for the catalog's writer turn, held until this transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(WRITE_LOCK)))


def _use_wal(conn: Any) -> None:
    """Switching a new file to WAL does not wait on a concurrent opener's lock: retry it."""
    deadline = time.monotonic() + _LOCK_WAIT_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
