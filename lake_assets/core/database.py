"""The catalog's database: SQLite under LAKE_HOME (WAL mode) or any database SQLAlchemy reaches (a
shared Postgres), one schema that every kind adds its own tables to, and one writer at a time.

A kind keeps its history (load records, refreshes, task runs, Kafka batches) in tables it
declares with `owned_table`, naming the objects whose rows they hold, so that dropping an object
drops its rows in the same transaction without the catalog knowing the kind."""

from __future__ import annotations

import functools
import os
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
from sqlalchemy.schema import CreateColumn, SchemaItem

from lake_assets.core.catalog_file import sqlite_trouble
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import catalog_lock_wait

# Postgres: the advisory lock every writing transaction (and the schema's creation) holds, so
# that writers take turns as they do on SQLite's one file ("lake" in ASCII).
WRITE_LOCK = 0x6C616B65
# Postgres's code for a lock not granted within lock_timeout.
_LOCK_NOT_AVAILABLE = "55P03"

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


def _missing(inspector: sa.Inspector) -> list[tuple[sa.Table, sa.Column[Any] | None]]:
    """The declared tables the database lacks (no column named), and the declared columns its
    tables lack."""
    existing = set(inspector.get_table_names())
    missing: list[tuple[sa.Table, sa.Column[Any] | None]] = []
    for name, table in SCHEMA.tables.items():
        if name not in existing:
            missing.append((table, None))
            continue
        present = {column["name"] for column in inspector.get_columns(name)}
        missing += [(table, column) for column in table.columns if column.name not in present]
    return missing


def _add_column(conn: Connection, table: sa.Table, column: sa.Column[Any]) -> None:
    """A column declared after the database was made: nullable, or with a server default."""
    definition = CreateColumn(column).compile(dialect=conn.dialect)
    conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN {definition}"))


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
        # How long a writer waits for another process's write lock before it fails.
        self.lock_wait = catalog_lock_wait(os.environ)
        with self._plainly():
            self._engine = _engine(url, self.lock_wait)

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """One consistent view that takes no write lock (SQLite in WAL mode and Postgres let it
        read while another process writes)."""
        with self._plainly():
            self._create_new_tables()
            with self._engine.connect() as conn, conn.begin():
                yield conn

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """One writer at a time (SQLite: BEGIN IMMEDIATE; Postgres: an advisory lock), so a
        transaction's reads still hold when it writes: two processes adding one name, or
        replacing one object, never both pass the check."""
        with self._plainly():
            self._create_new_tables()
            with self._engine.connect().execution_options(lake_write=True) as conn, conn.begin():
                _take_write_lock(conn, self.lock_wait)
                yield conn

    @property
    def insert(self) -> Callable[[sa.Table], Any]:
        """The dialect's INSERT, for ON CONFLICT clauses (SQLite and Postgres spell them alike)."""
        return (postgresql if self._engine.dialect.name == "postgresql" else sqlite).insert

    def _create_new_tables(self) -> None:
        """Tables declared since the last use (a kind imported late) are created once, and
        columns added to a declared table since a database was made are added to it; the write
        lock is taken only if something is missing, so that reading never waits on a writer."""
        if _CREATED.get(self.url) == len(SCHEMA.tables):
            return
        with self._engine.connect() as conn:
            missing = _missing(sa.inspect(conn))
        if missing:
            with self._engine.connect().execution_options(lake_write=True) as conn, conn.begin():
                # Processes opening a new database at once: one creates the tables, the others
                # wait.
                _take_write_lock(conn, self.lock_wait)
                SCHEMA.create_all(conn)
                for table, column in _missing(sa.inspect(conn)):
                    if column is not None:
                        _add_column(conn, table, column)
        _CREATED[self.url] = len(SCHEMA.tables)

    @contextmanager
    def _plainly(self) -> Iterator[None]:
        """A busy or damaged catalog is one line that says what to do, not the driver's words and
        SQL; any other error stays as it is."""
        try:
            yield
        except (sa.exc.DBAPIError, sqlite3.DatabaseError) as error:
            cause = error.orig if isinstance(error, sa.exc.DBAPIError) else error
            if isinstance(cause, sqlite3.DatabaseError):
                plain = sqlite_trouble(
                    cause, Path(self.url.removeprefix("sqlite:///")), self.lock_wait
                )
            elif getattr(cause, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
                plain = self._postgres_locked()
            else:
                plain = None
            if plain is None:
                raise
            raise plain from error

    def _postgres_locked(self) -> LakeError:
        """The sessions that hold the writers' advisory lock, as the server names them."""
        query = sa.text(
            "SELECT a.pid, a.application_name, host(a.client_addr) FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.granted AND (l.classid::bigint << 32) | l.objid::bigint = :key "
            "AND l.objsubid = 1"
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query, {"key": WRITE_LOCK}).all()
        holders = [
            f"server pid {pid}"
            + (f", application '{application}'" if application else "")
            + (f", client {client}" if client else "")
            for pid, application, client in rows
        ]
        return LakeError(
            f"the catalog database {self._engine.url!r} is busy: another session holds its "
            f"write lock ({'; '.join(holders) or 'which one is not known'}) and did not release "
            f"it within {self.lock_wait:g} s",
            "wait for that session to finish, or stop it, and run again "
            "(LAKE_CATALOG_LOCK_WAIT sets how many seconds a writer waits)",
        )


@functools.cache
def _engine(url: str, lock_wait: float) -> Engine:
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
    engine = sa.create_engine(url, connect_args={"timeout": lock_wait}, poolclass=sa.pool.NullPool)
    sa.event.listen(engine, "connect", _sqlite_autocommit)
    sa.event.listen(engine, "begin", _sqlite_begin)
    raw = engine.raw_connection()
    try:
        _use_wal(raw, lock_wait)
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


def _take_write_lock(conn: Connection, wait: float) -> None:
    """Postgres: wait for the catalog's writer turn, held until this transaction ends, at most
    `wait` seconds as SQLite's busy timeout does (a lock_timeout of 0 would mean no limit)."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = {max(1, round(wait * 1000))}")
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(WRITE_LOCK)))


def _use_wal(conn: Any, lock_wait: float) -> None:
    """Switching a new file to WAL does not wait on a concurrent opener's lock: retry it."""
    deadline = time.monotonic() + lock_wait
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
