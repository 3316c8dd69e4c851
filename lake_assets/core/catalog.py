"""The persistent registry of lakehouse objects, readable without Spark: SQLite under LAKE_HOME
(WAL mode) by default, or any database SQLAlchemy reaches (a shared Postgres) by URL."""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from lake_assets.core.entries import (
    RELATION,
    TASK,
    BadMessage,
    CatalogObject,
    KafkaBatch,
    LoadRecord,
    RefreshRecord,
    StoredRelation,
    TaskRunRecord,
    now_utc,
)
from lake_assets.core.errors import LakeError

T = TypeVar("T", bound=CatalogObject)
# A check that `add` and `replace` run inside their transaction: it raises to refuse the write.
Check = Callable[["CatalogView"], None]

# How long a writer waits for another process's transaction before giving up.
_LOCK_WAIT_SECONDS = 30
# Postgres: the advisory lock every writing transaction (and the schema's creation) holds, so
# that writers take turns as they do on SQLite's one file ("lake" in ASCII).
_WRITE_LOCK = 0x6C616B65

# Text compares byte by byte on Postgres too, as on SQLite: names list in one order and ISO
# times compare as written, whatever collation the database was created with.
_TEXT = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")

_schema = sa.MetaData()
_objects = sa.Table(
    "objects",
    _schema,
    sa.Column("namespace", _TEXT, primary_key=True),
    sa.Column("name", _TEXT, primary_key=True),
    sa.Column("kind", _TEXT, nullable=False),
    sa.Column("spec", _TEXT, nullable=False),
    sa.Column("created_at", _TEXT, nullable=False),
)
_load_history = sa.Table(
    "load_history",
    _schema,
    sa.Column("table_name", _TEXT, nullable=False),
    sa.Column("file_path", _TEXT, nullable=False),
    sa.Column("last_copy_time", _TEXT, nullable=False),
    sa.Column("file_size", sa.BigInteger),
    sa.Column("file_modified", _TEXT),
    sa.Column("status", _TEXT, nullable=False),
    sa.Column("rows_loaded", sa.BigInteger, nullable=False),
    sa.Column("first_error_message", _TEXT),
    sa.Column("pipe_name", _TEXT),
    sa.Column("commit_version", sa.BigInteger),
    sa.Index("load_history_by_path", "table_name", "file_path"),
    sa.Index("load_history_by_commit", "table_name", "file_path", "commit_version", unique=True),
)
_load_marks = sa.Table(
    "load_marks",
    _schema,
    sa.Column("table_name", _TEXT, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
)
_refresh_history = sa.Table(
    "refresh_history",
    _schema,
    sa.Column("id", _TEXT, primary_key=True),
    sa.Column("name", _TEXT, nullable=False),
    sa.Column("state", _TEXT, nullable=False),
    sa.Column("refresh_mode", _TEXT),
    sa.Column("refresh_trigger", _TEXT, nullable=False),
    sa.Column("start_time", _TEXT, nullable=False),
    sa.Column("end_time", _TEXT, nullable=False),
    sa.Column("duration", sa.Float, nullable=False),
    sa.Column("source_tables", _TEXT, nullable=False),
    sa.Column("rows_inserted", sa.BigInteger),
    sa.Column("rows_deleted", sa.BigInteger),
    sa.Column("error_message", _TEXT),
    sa.Column("reason", _TEXT),
    sa.Column("dt_version", sa.BigInteger),
    sa.Index("refresh_history_by_name", "name", "start_time"),
)
_task_history = sa.Table(
    "task_history",
    _schema,
    sa.Column("id", _TEXT, primary_key=True),
    sa.Column("name", _TEXT, nullable=False),
    sa.Column("state", _TEXT, nullable=False),
    sa.Column("trigger", _TEXT, nullable=False),
    sa.Column("start_time", _TEXT, nullable=False),
    sa.Column("end_time", _TEXT, nullable=False),
    sa.Column("duration", sa.Float, nullable=False),
    sa.Column("streams", _TEXT, nullable=False),
    sa.Column("rows_written", sa.BigInteger),
    sa.Column("error_message", _TEXT),
    sa.Column("reason", _TEXT),
    sa.Index("task_history_by_name", "name", "start_time"),
)
_kafka_batches = sa.Table(
    "kafka_batches",
    _schema,
    sa.Column("pipe", _TEXT, primary_key=True),
    sa.Column("number", sa.BigInteger, primary_key=True),
    sa.Column("start", _TEXT, nullable=False),
    sa.Column("end", _TEXT, nullable=False),
    sa.Column("table_version", sa.BigInteger, nullable=False),
    sa.Column("planned_at", _TEXT, nullable=False),
    sa.Column("state", _TEXT, nullable=False),
    sa.Column("finished_at", _TEXT),
    sa.Column("commit_version", sa.BigInteger),
    sa.Column("messages", sa.BigInteger),
    sa.Column("rows", sa.BigInteger),
    sa.Column("bad", sa.BigInteger),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("error", _TEXT),
)
_kafka_errors = sa.Table(
    "kafka_errors",
    _schema,
    sa.Column("pipe", _TEXT, primary_key=True),
    sa.Column("partition", sa.Integer, primary_key=True),
    sa.Column("offset", sa.BigInteger, primary_key=True),
    sa.Column("batch", sa.BigInteger, nullable=False),
    sa.Column("timestamp", _TEXT),
    sa.Column("key", sa.LargeBinary),
    sa.Column("value", sa.LargeBinary),
    sa.Column("error", _TEXT, nullable=False),
)
_table_state = sa.Table(
    "table_state",
    _schema,
    sa.Column("name", _TEXT, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("row_count", sa.BigInteger, nullable=False),
    sa.Column("updated_at", _TEXT, nullable=False),
)


def catalog_url(location: Path | str) -> str:
    """A database URL as given, or the SQLite file at a path."""
    text = str(location)
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"


@functools.cache
def _engine(url: str) -> Engine:
    """One engine per database and process; a new SQLite file gets WAL mode and the schema."""
    if not url.startswith("sqlite"):
        engine = sa.create_engine(url, pool_pre_ping=True)
        try:
            with engine.connect() as conn, conn.begin():
                # Processes opening a new database at once: one creates the tables, the others
                # wait.
                _take_write_lock(conn)
                _schema.create_all(conn)
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
    with engine.connect().execution_options(lake_write=True) as conn, conn.begin():
        _schema.create_all(conn)
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
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_WRITE_LOCK)))


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


def unknown_table(name: str) -> LakeError:
    return LakeError(
        f"table {name} does not exist",
        "check the name with SHOW TABLES or create it with CREATE TABLE",
    )


class CatalogView:
    """The catalog as one transaction sees it: a check run on it inside a writing transaction
    still holds when that transaction writes, as no other writer can commit in between."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def find_in(self, namespace: str, name: str) -> CatalogObject | None:
        """Whatever holds the name in a namespace, of any kind."""
        query = _with_state().where(_objects.c.namespace == namespace, _objects.c.name == name)
        row = self._conn.execute(query).first()
        return _entry(row) if row is not None else None

    def entries(self, kind: type[T]) -> list[T]:
        """Every object of a kind, by name."""
        rows = self._conn.execute(
            _with_state()
            .where(_objects.c.namespace == kind.NAMESPACE, _objects.c.kind == kind.kind())
            .order_by(_objects.c.name)
        ).all()
        return [entry for row in rows if isinstance(entry := _entry(row), kind)]

    def users_of(self, kind: type[CatalogObject], name: str) -> list[str]:
        """The objects that name this one (`pipe p`, `task k`), as DROP refuses them."""
        users = []
        for user in CatalogObject.KINDS.values():
            fields = [field for field, space in user.REFERENCES.items() if space == kind.NAMESPACE]
            if not fields:
                continue
            for entry in self.entries(user):
                for field_name in fields:
                    value = getattr(entry, field_name)
                    if value == name or (isinstance(value, tuple) and name in value):
                        users.append(f"{user.LABEL} {entry.name}")
                        break
        return users


class Catalog:
    """Names → objects of every kind; every write is one transaction, safe across processes."""

    def __init__(self, location: Path | str) -> None:
        self.url = catalog_url(location)
        self._engine = _engine(self.url)

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One writer at a time (SQLite: BEGIN IMMEDIATE; Postgres: an advisory lock), so a
        transaction's reads still hold when it writes: two processes adding one name, or
        replacing one object, never both pass the check."""
        with self._engine.connect().execution_options(lake_write=True) as conn, conn.begin():
            _take_write_lock(conn)
            yield conn

    def _insert(self) -> Any:
        """The dialect's INSERT, for ON CONFLICT clauses (SQLite and Postgres spell them alike)."""
        return (postgresql if self._engine.dialect.name == "postgresql" else sqlite).insert

    # Objects of every kind

    def add(self, entry: T, check: Check | None = None) -> T:
        """Register a new object; fails if its namespace already has the name, or if `check`
        (run on the catalog as this transaction sees it) raises."""
        created = replace(entry, created_at=entry.created_at or now_utc())
        with self._writing() as conn:
            view = CatalogView(conn)
            existing = view.find_in(entry.NAMESPACE, entry.name)
            if existing is not None:
                raise LakeError(
                    f"{existing.LABEL} {entry.name} already exists",
                    f"use {entry.CREATE} IF NOT EXISTS, pick another name, or DROP it first",
                )
            if check is not None:
                check(view)
            conn.execute(sa.insert(_objects).values(_row(created)))
        return created

    def replace(self, entry: T, check: Check | None = None) -> T | None:
        """Register an object in place of one of the same kind (OR REPLACE); return that one.
        `check` runs as in `add`."""
        created = replace(entry, created_at=entry.created_at or now_utc())
        with self._writing() as conn:
            view = CatalogView(conn)
            existing = view.find_in(entry.NAMESPACE, entry.name)
            if existing is not None and not isinstance(existing, type(entry)):
                raise LakeError(
                    f"{existing.LABEL} {entry.name} already exists",
                    f"pick another name for the {entry.LABEL}, or DROP the {existing.LABEL} first",
                )
            if check is not None:
                check(view)
            if existing is not None:
                self._delete(conn, existing)
            conn.execute(sa.insert(_objects).values(_row(created)))
        return existing

    def find(self, kind: type[T], name: str) -> T | None:
        with self._reading() as conn:
            found = self._select(conn, kind.NAMESPACE, name)
        return found if isinstance(found, kind) else None

    def get(self, kind: type[T], name: str) -> T:
        """The object, or an error that says how to find the right name."""
        with self._reading() as conn:
            found = self._select(conn, kind.NAMESPACE, name)
        if found is None:
            raise kind.unknown(name)
        if not isinstance(found, kind):
            raise found.mistaken_for(kind)
        return found

    def entries(self, kind: type[T]) -> list[T]:
        """Every object of a kind, by name."""
        with self._reading() as conn:
            return CatalogView(conn).entries(kind)

    def find_in(self, namespace: str, name: str) -> CatalogObject | None:
        """Whatever holds the name in a namespace, of any kind."""
        with self._reading() as conn:
            return self._select(conn, namespace, name)

    def find_relation(self, name: str) -> CatalogObject | None:
        return self.find_in(RELATION, name)

    def relation(self, name: str) -> CatalogObject:
        """A table, dynamic table or other relation, for statements that only read it."""
        found = self.find_relation(name)
        if found is None:
            raise unknown_table(name)
        return found

    def stored(self, name: str) -> StoredRelation:
        """A relation with a Delta table of its own; a stream is refused in its own words."""
        found = self.relation(name)
        if not isinstance(found, StoredRelation):
            raise found.mistaken_for(StoredRelation)
        return found

    def relations(self) -> list[CatalogObject]:
        with self._reading() as conn:
            rows = conn.execute(
                _with_state().where(_objects.c.namespace == RELATION).order_by(_objects.c.name)
            ).all()
        return [_entry(row) for row in rows]

    def relation_locations(self) -> dict[str, str]:
        """Location → name, so that errors can say a table's name instead of its path."""
        return {
            entry.location: entry.name
            for entry in self.relations()
            if isinstance(entry, StoredRelation)
        }

    def update(self, kind: type[T], name: str, change: Callable[[T], T]) -> T:
        """Change an object in one transaction: `change` sees it as it is now."""
        with self._writing() as conn:
            found = self._select(conn, kind.NAMESPACE, name)
            if found is None:
                raise kind.unknown(name)
            if not isinstance(found, kind):
                raise found.mistaken_for(kind)
            updated = change(found)
            conn.execute(
                sa.update(_objects)
                .where(_objects.c.namespace == kind.NAMESPACE, _objects.c.name == name)
                .values(spec=updated.to_spec())
            )
        return updated

    def remove(self, kind: type[T], name: str, *, unused: bool = False) -> T | None:
        """Unregister an object with what the catalog kept about it; return what it was.
        `unused`: refuse while another object names it, checked in the same transaction, so
        that no object created meanwhile is left naming nothing."""
        with self._writing() as conn:
            view = CatalogView(conn)
            found = view.find_in(kind.NAMESPACE, name)
            if not isinstance(found, kind):
                return None
            if unused and (users := view.users_of(kind, name)):
                raise LakeError(
                    f"{found.LABEL} {name} is used by {users[0]}", f"drop {users[0]} first"
                )
            self._delete(conn, found)
        return found

    def users_of(self, kind: type[CatalogObject], name: str) -> list[str]:
        """The objects that name this one (`pipe p`, `dynamic table d`)."""
        with self._reading() as conn:
            return CatalogView(conn).users_of(kind, name)

    def _select(self, conn: Connection, namespace: str, name: str) -> CatalogObject | None:
        return CatalogView(conn).find_in(namespace, name)

    def _delete(self, conn: Connection, entry: CatalogObject) -> None:
        conn.execute(
            sa.delete(_objects).where(
                _objects.c.namespace == entry.NAMESPACE, _objects.c.name == entry.name
            )
        )
        if entry.NAMESPACE == RELATION:
            conn.execute(sa.delete(_table_state).where(_table_state.c.name == entry.name))
            conn.execute(sa.delete(_load_history).where(_load_history.c.table_name == entry.name))
            conn.execute(sa.delete(_load_marks).where(_load_marks.c.table_name == entry.name))
            conn.execute(sa.delete(_refresh_history).where(_refresh_history.c.name == entry.name))
        if entry.NAMESPACE == TASK:
            conn.execute(sa.delete(_task_history).where(_task_history.c.name == entry.name))

    # A relation's state: the newest commit's version and row count

    def record_table_state(self, entry: CatalogObject, version: int, row_count: int) -> None:
        """Remember a commit's version and row count; an older commit never overwrites a newer,
        and a commit of a dropped table never lands on a new table of the same name."""
        with self._writing() as conn:
            current = self._select(conn, RELATION, entry.name)
            if current is None or getattr(current, "location", None) != getattr(
                entry, "location", None
            ):
                return
            insert = self._insert()(_table_state).values(
                name=entry.name, version=version, row_count=row_count, updated_at=now_utc()
            )
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[_table_state.c.name],
                    set_={
                        "version": insert.excluded.version,
                        "row_count": insert.excluded.row_count,
                        "updated_at": insert.excluded.updated_at,
                    },
                    where=insert.excluded.version > _table_state.c.version,
                )
            )

    # Load history: an index of the load records that ride in load commits

    def record_loads(self, table: str, records: list[LoadRecord], version: int | None) -> None:
        """Add load records (a commit's records only once); `version` moves the table's mark."""
        with self._writing() as conn:
            if records:
                conn.execute(
                    self._insert()(_load_history).on_conflict_do_nothing(),
                    [{"table_name": table, **asdict(record)} for record in records],
                )
            if version is not None:
                insert = self._insert()(_load_marks).values(table_name=table, version=version)
                conn.execute(
                    insert.on_conflict_do_update(
                        index_elements=[_load_marks.c.table_name],
                        set_={"version": insert.excluded.version},
                        where=insert.excluded.version > _load_marks.c.version,
                    )
                )

    def load_mark(self, table: str) -> int:
        """The newest commit version whose load records are in the index (-1: none)."""
        with self._reading() as conn:
            version = conn.execute(
                sa.select(_load_marks.c.version).where(_load_marks.c.table_name == table)
            ).scalar()
        return -1 if version is None else version

    def load_history(self, table: str, since: str | None = None) -> list[LoadRecord]:
        """Records newest first; `since` (an ISO time) drops the expired ones."""
        columns = [c for c in _load_history.c if c.name != "table_name"]
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(*columns)
                .where(
                    _load_history.c.table_name == table,
                    _load_history.c.last_copy_time >= (since or ""),
                )
                .order_by(_load_history.c.last_copy_time.desc(), _load_history.c.file_path)
            ).all()
        return [LoadRecord(**row._asdict()) for row in rows]

    # Refresh history of dynamic tables: an index of the records that ride in refresh commits

    def record_refresh(self, record: RefreshRecord) -> None:
        """Add a refresh to the history; a refresh already recorded (same id) is kept as is."""
        values = {
            **asdict(record),
            "source_tables": json.dumps(record.source_tables, sort_keys=True),
        }
        with self._writing() as conn:
            conn.execute(self._insert()(_refresh_history).values(values).on_conflict_do_nothing())

    def refresh_history(self, name: str | None = None) -> list[RefreshRecord]:
        """Refreshes newest first, of one dynamic table or of all."""
        query = sa.select(_refresh_history).order_by(
            _refresh_history.c.start_time.desc(), _refresh_history.c.id
        )
        if name is not None:
            query = query.where(_refresh_history.c.name == name)
        with self._reading() as conn:
            rows = conn.execute(query).all()
        return [
            RefreshRecord(**{**row._asdict(), "source_tables": json.loads(row.source_tables)})
            for row in rows
        ]

    # Task history: every run of a task, as the run (or the next one, for a dead run) records it

    def record_task_run(self, record: TaskRunRecord) -> None:
        """Add a task run to the history; a run already recorded (same id) is kept as is."""
        values = {**asdict(record), "streams": json.dumps(record.streams, sort_keys=True)}
        with self._writing() as conn:
            conn.execute(self._insert()(_task_history).values(values).on_conflict_do_nothing())

    def task_history(self, name: str | None = None) -> list[TaskRunRecord]:
        """Task runs newest first, of one task or of all."""
        query = sa.select(_task_history).order_by(
            _task_history.c.start_time.desc(), _task_history.c.end_time.desc(), _task_history.c.id
        )
        if name is not None:
            query = query.where(_task_history.c.name == name)
        with self._reading() as conn:
            rows = conn.execute(query).all()
        return [
            TaskRunRecord(**{**row._asdict(), "streams": json.loads(row.streams)}) for row in rows
        ]

    # Kafka pipes' batches: planned once, each range fixed, then settled by its commit

    def plan_batch(self, batch: KafkaBatch) -> KafkaBatch:
        """Store a batch unless its number is planned already; the stored one is returned, so
        that a planned range never changes."""
        values = {
            **asdict(batch),
            "start": _offsets_json(batch.start),
            "end": _offsets_json(batch.end),
        }
        with self._writing() as conn:
            conn.execute(self._insert()(_kafka_batches).values(values).on_conflict_do_nothing())
            row = conn.execute(self._batch_query(batch.pipe, batch.number)).one()
        return _batch(row)

    def batches(self, pipe: str, limit: int | None = None) -> list[KafkaBatch]:
        """A pipe's batches, newest first."""
        query = (
            sa.select(_kafka_batches)
            .where(_kafka_batches.c.pipe == pipe)
            .order_by(_kafka_batches.c.number.desc())
            .limit(limit)
        )
        with self._reading() as conn:
            return [_batch(row) for row in conn.execute(query).all()]

    def settle_batch(self, pipe: str, number: int, **outcome: Any) -> KafkaBatch:
        """Record how a batch's attempt ended (COMMITTED with its version and counts, or the
        error of a failed attempt)."""
        with self._writing() as conn:
            conn.execute(
                sa.update(_kafka_batches)
                .where(_kafka_batches.c.pipe == pipe, _kafka_batches.c.number == number)
                .values(attempts=_kafka_batches.c.attempts + 1, finished_at=now_utc(), **outcome)
            )
            return _batch(conn.execute(self._batch_query(pipe, number)).one())

    def forget_batches(self, pipe: str) -> None:
        """A dropped pipe's batches and bad messages."""
        with self._writing() as conn:
            conn.execute(sa.delete(_kafka_batches).where(_kafka_batches.c.pipe == pipe))
            conn.execute(sa.delete(_kafka_errors).where(_kafka_errors.c.pipe == pipe))

    def record_bad_messages(self, pipe: str, batch: int, messages: list[BadMessage]) -> None:
        """Index a committed batch's bad messages (each once: its commit record holds them)."""
        if not messages:
            return
        values = [{"pipe": pipe, "batch": batch, **asdict(m)} for m in messages]
        with self._writing() as conn:
            conn.execute(self._insert()(_kafka_errors).values(values).on_conflict_do_nothing())

    def bad_messages(self, pipe: str) -> list[tuple[int, BadMessage]]:
        """A pipe's bad messages with their batch, by partition and offset."""
        query = (
            sa.select(_kafka_errors)
            .where(_kafka_errors.c.pipe == pipe)
            .order_by(_kafka_errors.c.partition, _kafka_errors.c.offset)
        )
        with self._reading() as conn:
            rows = conn.execute(query).all()
        return [
            (
                row.batch,
                BadMessage(
                    **{k: v for k, v in row._asdict().items() if k not in ("pipe", "batch")}
                ),
            )
            for row in rows
        ]

    @staticmethod
    def _batch_query(pipe: str, number: int) -> sa.Select:
        return sa.select(_kafka_batches).where(
            _kafka_batches.c.pipe == pipe, _kafka_batches.c.number == number
        )


def _offsets_json(offsets: dict[int, int]) -> str:
    return json.dumps({str(p): o for p, o in sorted(offsets.items())})


def _batch(row: sa.Row) -> KafkaBatch:
    values = row._asdict()
    for key in ("start", "end"):
        values[key] = {int(p): o for p, o in json.loads(values[key]).items()}
    return KafkaBatch(**values)


def _with_state() -> sa.Select:
    return sa.select(_objects, _table_state.c.version, _table_state.c.row_count).select_from(
        _objects.outerjoin(_table_state, _table_state.c.name == _objects.c.name)
    )


def _row(entry: CatalogObject) -> dict[str, str]:
    return {
        "namespace": entry.NAMESPACE,
        "name": entry.name,
        "kind": entry.kind(),
        "spec": entry.to_spec(),
        "created_at": entry.created_at,
    }


def _entry(row: sa.Row) -> CatalogObject:
    kind = CatalogObject.KINDS[row.kind]
    state = {key: getattr(row, key) for key in kind.STATE}
    return kind.from_spec(row.name, row.created_at, row.spec, **state)
