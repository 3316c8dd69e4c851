"""The persistent registry of lakehouse objects: SQLite under LAKE_HOME, readable without Spark."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lake_assets.core.errors import LakeError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    spec       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS load_history (
    table_name          TEXT NOT NULL,
    file_path           TEXT NOT NULL,
    last_copy_time      TEXT NOT NULL,
    file_size           INTEGER,
    file_modified       TEXT,
    status              TEXT NOT NULL,
    rows_loaded         INTEGER NOT NULL,
    first_error_message TEXT,
    pipe_name           TEXT,
    commit_version      INTEGER
);
CREATE INDEX IF NOT EXISTS load_history_by_path ON load_history (table_name, file_path);
CREATE UNIQUE INDEX IF NOT EXISTS load_history_by_commit
    ON load_history (table_name, file_path, commit_version);
CREATE TABLE IF NOT EXISTS load_marks (
    table_name TEXT PRIMARY KEY,
    version    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refresh_history (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    state           TEXT NOT NULL,
    refresh_mode    TEXT,
    refresh_trigger TEXT NOT NULL,
    start_time      TEXT NOT NULL,
    end_time        TEXT NOT NULL,
    duration        REAL NOT NULL,
    source_tables   TEXT NOT NULL,
    rows_inserted   INTEGER,
    rows_deleted    INTEGER,
    error_message   TEXT,
    reason          TEXT,
    dt_version      INTEGER
);
CREATE INDEX IF NOT EXISTS refresh_history_by_name ON refresh_history (name, start_time);
CREATE TABLE IF NOT EXISTS table_state (
    name       TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    row_count  INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class CatalogObject:
    """An object stored as JSON under (namespace, name); subclasses name their namespace."""

    NAMESPACE: ClassVar[str] = ""
    LABEL: ClassVar[str] = ""
    # Fields that name another object, and that object's namespace: DROP refuses while used.
    REFERENCES: ClassVar[dict[str, str]] = {}
    # Every kind of object, by namespace (filled as the kinds' entry modules are imported).
    KINDS: ClassVar[dict[str, type[CatalogObject]]] = {}

    name: str
    created_at: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        CatalogObject.KINDS[cls.NAMESPACE] = cls

    def to_spec(self) -> str:
        spec = asdict(self)
        spec.pop("name")
        spec.pop("created_at")
        return json.dumps(spec)

    @classmethod
    def from_spec(cls, name: str, created_at: str, spec: str) -> CatalogObject:
        values: dict[str, Any] = json.loads(spec)
        for item in fields(cls):
            if isinstance(values.get(item.name), list):
                values[item.name] = tuple(values[item.name])
        return cls(name=name, created_at=created_at, **values)


T = TypeVar("T", bound=CatalogObject)

# Tables, streams and dynamic tables are all relations: they share the namespace 'relation'.


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None = None


@dataclass(frozen=True)
class TableEntry:
    """A Delta table the lakehouse owns; `properties` are the seed-level ones (change_tracking)."""

    name: str
    location: str
    columns: tuple[Column, ...]
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    version: int | None = None
    row_count: int | None = None

    @property
    def change_tracking(self) -> bool:
        return self.properties.get("change_tracking", "false").lower() == "true"

    def to_spec(self) -> str:
        spec = asdict(self)
        for key in ("name", "created_at", "version", "row_count"):
            spec.pop(key)
        return json.dumps(spec)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> TableEntry:
        spec = json.loads(row["spec"])
        return cls(
            name=row["name"],
            location=spec["location"],
            columns=tuple(Column(**column) for column in spec["columns"]),
            comment=spec.get("comment"),
            properties=spec.get("properties", {}),
            created_at=row["created_at"],
            version=row["version"],
            row_count=row["row_count"],
        )


@dataclass(frozen=True)
class DynamicTableEntry:
    """A Delta table kept equal to its query; `hidden` columns hold aggregate state (not shown)."""

    name: str
    location: str
    query: str
    sources: tuple[str, ...]
    columns: tuple[Column, ...]
    hidden: tuple[str, ...] = ()
    comment: str | None = None
    refresh_interval_seconds: int | None = None
    vcluster: str | None = None
    suspended: bool = False
    created_at: str = ""
    version: int | None = None
    row_count: int | None = None

    def to_spec(self) -> str:
        spec = asdict(self)
        for key in ("name", "created_at", "version", "row_count"):
            spec.pop(key)
        return json.dumps(spec)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> DynamicTableEntry:
        spec = json.loads(row["spec"])
        return cls(
            name=row["name"],
            location=spec["location"],
            query=spec["query"],
            sources=tuple(spec["sources"]),
            columns=tuple(Column(**column) for column in spec["columns"]),
            hidden=tuple(spec.get("hidden", ())),
            comment=spec.get("comment"),
            refresh_interval_seconds=spec.get("refresh_interval_seconds"),
            vcluster=spec.get("vcluster"),
            suspended=spec.get("suspended", False),
            created_at=row["created_at"],
            version=row["version"],
            row_count=row["row_count"],
        )


@dataclass(frozen=True)
class RefreshRecord:
    """One refresh of a dynamic table: SUCCEED, FAILED or SKIPPED, and what it read and wrote."""

    id: str
    name: str
    state: str
    refresh_mode: str | None
    refresh_trigger: str
    start_time: str
    end_time: str
    duration: float
    source_tables: dict[str, int]
    rows_inserted: int | None = None
    rows_deleted: int | None = None
    error_message: str | None = None
    reason: str | None = None
    dt_version: int | None = None

    def values(self) -> tuple:
        values = asdict(self)
        values["source_tables"] = json.dumps(self.source_tables, sort_keys=True)
        return tuple(values.values())

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RefreshRecord:
        values = {key: row[key] for key in row.keys()}  # noqa: SIM118 - Row iterates values
        values["source_tables"] = json.loads(values["source_tables"])
        return cls(**values)


# How long a writer waits for another process's transaction before giving up.
_LOCK_WAIT_SECONDS = 30


def _use_wal(conn: sqlite3.Connection) -> None:
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


class Catalog:
    """Names → objects; every write is one SQLite transaction, safe across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            _use_wal(conn)
            conn.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=_LOCK_WAIT_SECONDS, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def add_table(self, entry: TableEntry) -> TableEntry:
        """Register a new table; fails if any relation already has the name."""
        created = replace(entry, created_at=now_utc())
        with self._transaction() as conn:
            existing = conn.execute(
                "SELECT kind FROM objects WHERE namespace = 'relation' AND name = ?",
                (entry.name,),
            ).fetchone()
            if existing is not None:
                raise LakeError(
                    f"{existing['kind'].replace('_', ' ')} {entry.name} already exists",
                    "use CREATE TABLE IF NOT EXISTS, pick another name, or DROP it first",
                )
            conn.execute(
                "INSERT INTO objects (namespace, name, kind, spec, created_at) "
                "VALUES ('relation', ?, 'table', ?, ?)",
                (created.name, created.to_spec(), created.created_at),
            )
        return created

    def find_table(self, name: str) -> TableEntry | None:
        with self._connect() as conn:
            return _select_table(conn, name)

    def table(self, name: str) -> TableEntry:
        """The table called `name`, or an error that says how to find the right name."""
        with self._connect() as conn:
            return _require_table(conn, name)

    def tables(self) -> list[TableEntry]:
        with self._connect() as conn:
            rows = conn.execute(f"{_TABLES_QUERY} ORDER BY o.name").fetchall()
        return [TableEntry.from_row(row) for row in rows]

    def remove_table(self, name: str) -> TableEntry | None:
        """Unregister a table and return what it was, or None when it was not there."""
        with self._transaction() as conn:
            entry = _select_table(conn, name)
            if entry is not None:
                conn.execute(
                    "DELETE FROM objects WHERE namespace = 'relation' AND name = ?", (name,)
                )
                conn.execute("DELETE FROM table_state WHERE name = ?", (name,))
                conn.execute("DELETE FROM load_history WHERE table_name = ?", (name,))
                conn.execute("DELETE FROM load_marks WHERE table_name = ?", (name,))
        return entry

    def set_table_properties(self, name: str, properties: dict[str, str]) -> TableEntry:
        with self._transaction() as conn:
            entry = _require_table(conn, name)
            updated = replace(entry, properties={**entry.properties, **properties})
            conn.execute(
                "UPDATE objects SET spec = ? WHERE namespace = 'relation' AND name = ?",
                (updated.to_spec(), name),
            )
        return updated

    def record_table_state(
        self, entry: TableEntry | DynamicTableEntry, version: int, row_count: int
    ) -> None:
        """Remember a commit's version and row count; an older commit never overwrites a newer,
        and a commit of a dropped table never lands on a new table of the same name."""
        with self._transaction() as conn:
            if _relation_location(conn, entry.name) != entry.location:
                return
            conn.execute(
                "INSERT INTO table_state (name, version, row_count, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                "version = excluded.version, row_count = excluded.row_count, "
                "updated_at = excluded.updated_at WHERE excluded.version > table_state.version",
                (entry.name, version, row_count, now_utc()),
            )

    def add_dynamic_table(
        self, entry: DynamicTableEntry, replace_existing: bool = False
    ) -> DynamicTableEntry | None:
        """Register a dynamic table; with `replace_existing`, return the one it replaces."""
        created = replace(entry, created_at=now_utc())
        with self._transaction() as conn:
            existing = conn.execute(
                "SELECT kind FROM objects WHERE namespace = 'relation' AND name = ?",
                (entry.name,),
            ).fetchone()
            replaced = None
            if existing is not None:
                if existing["kind"] != "dynamic_table" or not replace_existing:
                    raise LakeError(
                        f"{existing['kind'].replace('_', ' ')} {entry.name} already exists",
                        "pick another name, DROP it first, or use CREATE OR REPLACE DYNAMIC TABLE",
                    )
                replaced = _select_dynamic(conn, entry.name)
                conn.execute("DELETE FROM table_state WHERE name = ?", (entry.name,))
                conn.execute(
                    "DELETE FROM objects WHERE namespace = 'relation' AND name = ?", (entry.name,)
                )
            conn.execute(
                "INSERT INTO objects (namespace, name, kind, spec, created_at) "
                "VALUES ('relation', ?, 'dynamic_table', ?, ?)",
                (created.name, created.to_spec(), created.created_at),
            )
        return replaced

    def find_dynamic_table(self, name: str) -> DynamicTableEntry | None:
        with self._connect() as conn:
            return _select_dynamic(conn, name)

    def dynamic_table(self, name: str) -> DynamicTableEntry:
        entry = self.find_dynamic_table(name)
        if entry is None:
            raise LakeError(
                f"dynamic table {name} does not exist",
                "check the name with SHOW DYNAMIC TABLES or create it with CREATE DYNAMIC TABLE",
            )
        return entry

    def dynamic_tables(self) -> list[DynamicTableEntry]:
        with self._connect() as conn:
            rows = conn.execute(f"{_DYNAMIC_QUERY} ORDER BY o.name").fetchall()
        return [DynamicTableEntry.from_row(row) for row in rows]

    def dynamic_readers(self, name: str) -> list[str]:
        """Dynamic tables that read the relation `name`."""
        return [entry.name for entry in self.dynamic_tables() if name in entry.sources]

    def relation(self, name: str) -> TableEntry | DynamicTableEntry:
        """A table or dynamic table, for statements that only read it."""
        with self._connect() as conn:
            found = _select_dynamic(conn, name) or _select_table(conn, name)
        if found is None:
            raise unknown_table(name)
        return found

    def remove_dynamic_table(self, name: str) -> DynamicTableEntry | None:
        """Unregister a dynamic table with its refresh history; return what it was."""
        with self._transaction() as conn:
            entry = _select_dynamic(conn, name)
            if entry is not None:
                conn.execute(
                    "DELETE FROM objects WHERE namespace = 'relation' AND name = ?", (name,)
                )
                conn.execute("DELETE FROM table_state WHERE name = ?", (name,))
                conn.execute("DELETE FROM refresh_history WHERE name = ?", (name,))
        return entry

    def set_suspended(self, name: str, suspended: bool) -> DynamicTableEntry:
        with self._transaction() as conn:
            entry = _select_dynamic(conn, name)
            if entry is None:
                raise LakeError(
                    f"dynamic table {name} does not exist",
                    "check the name with SHOW DYNAMIC TABLES",
                )
            updated = replace(entry, suspended=suspended)
            conn.execute(
                "UPDATE objects SET spec = ? WHERE namespace = 'relation' AND name = ?",
                (updated.to_spec(), name),
            )
        return updated

    def record_refresh(self, record: RefreshRecord) -> None:
        """Add a refresh to the history; a refresh already recorded (same id) is kept as is."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO refresh_history VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                record.values(),
            )

    def refresh_history(self, name: str | None = None) -> list[RefreshRecord]:
        """Refreshes newest first, of one dynamic table or of all."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT * FROM refresh_history WHERE ? IS NULL OR name = ? "
                "ORDER BY start_time DESC, id",
                (name, name),
            ).fetchall()
        return [RefreshRecord.from_row(row) for row in rows]

    def add_object(self, entry: CatalogObject) -> None:
        """Register a connection, volume or pipe; fails if its namespace already has the name."""
        with self._transaction() as conn:
            exists = conn.execute(
                "SELECT 1 FROM objects WHERE namespace = ? AND name = ?",
                (entry.NAMESPACE, entry.name),
            ).fetchone()
            if exists:
                raise LakeError(
                    f"{entry.LABEL} {entry.name} already exists",
                    "use IF NOT EXISTS, pick another name, or DROP it first",
                )
            conn.execute(
                "INSERT INTO objects (namespace, name, kind, spec, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (entry.NAMESPACE, entry.name, entry.NAMESPACE, entry.to_spec(), entry.created_at),
            )

    def find_object(self, kind: type[T], name: str) -> T | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT name, spec, created_at FROM objects WHERE namespace = ? AND name = ?",
                (kind.NAMESPACE, name),
            ).fetchone()
        return kind.from_spec(row["name"], row["created_at"], row["spec"]) if row else None

    def get_object(self, kind: type[T], name: str) -> T:
        """The object, or an error that says how to find the right name."""
        entry = self.find_object(kind, name)
        if entry is None:
            raise LakeError(
                f"{kind.LABEL} {name} does not exist",
                f"check the name with SHOW {kind.LABEL.split()[-1].upper()}S or create it",
            )
        return entry

    def objects(self, kind: type[T]) -> list[T]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT name, spec, created_at FROM objects WHERE namespace = ? ORDER BY name",
                (kind.NAMESPACE,),
            ).fetchall()
        return [kind.from_spec(row["name"], row["created_at"], row["spec"]) for row in rows]

    def users_of(self, kind: type[CatalogObject], name: str) -> list[str]:
        """The objects that name this one (`pipe p`, `volume v`), as DROP's refusal lists them."""
        return [
            f"{user.LABEL} {entry.name}"
            for user in CatalogObject.KINDS.values()
            for field_name, namespace in user.REFERENCES.items()
            if namespace == kind.NAMESPACE
            for entry in self.objects(user)
            if getattr(entry, field_name) == name
        ]

    def update_object(self, entry: CatalogObject) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE objects SET spec = ? WHERE namespace = ? AND name = ?",
                (entry.to_spec(), entry.NAMESPACE, entry.name),
            )

    def remove_object(self, kind: type[T], name: str) -> T | None:
        entry = self.find_object(kind, name)
        if entry is not None:
            with self._transaction() as conn:
                conn.execute(
                    "DELETE FROM objects WHERE namespace = ? AND name = ?", (kind.NAMESPACE, name)
                )
        return entry

    def record_loads(self, table: str, records: list[LoadRecord], version: int | None) -> None:
        """Add load records (a commit's records only once); `version` moves the table's mark."""
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO load_history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(table, *record.values()) for record in records],
            )
            if version is not None:
                conn.execute(
                    "INSERT INTO load_marks VALUES (?, ?) ON CONFLICT(table_name) DO UPDATE "
                    "SET version = excluded.version WHERE excluded.version > load_marks.version",
                    (table, version),
                )

    def load_mark(self, table: str) -> int:
        """The newest commit version whose load records are in the index (-1: none)."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT version FROM load_marks WHERE table_name = ?", (table,)
            ).fetchone()
        return row["version"] if row else -1

    def load_history(self, table: str, since: str | None = None) -> list[LoadRecord]:
        """Records newest first; `since` (an ISO time) drops the expired ones."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT * FROM load_history WHERE table_name = ? AND last_copy_time >= ? "
                "ORDER BY last_copy_time DESC, file_path",
                (table, since or ""),
            ).fetchall()
        return [LoadRecord.from_row(row) for row in rows]


@dataclass(frozen=True)
class LoadRecord:
    """One file's load: LOADED, LOAD_FAILED or PARTIALLY_LOADED."""

    file_path: str
    last_copy_time: str
    file_size: int | None
    file_modified: str | None
    status: str
    rows_loaded: int
    first_error_message: str | None
    pipe_name: str | None
    commit_version: int | None

    def values(self) -> tuple:
        return tuple(asdict(self).values())

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LoadRecord:
        columns = row.keys()  # sqlite3.Row iterates over values, not keys
        return cls(**{key: row[key] for key in columns if key != "table_name"})


_TABLES_QUERY = (
    "SELECT o.name, o.spec, o.created_at, s.version, s.row_count "
    "FROM objects o LEFT JOIN table_state s ON s.name = o.name "
    "WHERE o.namespace = 'relation' AND o.kind = 'table'"
)


_DYNAMIC_QUERY = (
    "SELECT o.name, o.spec, o.created_at, s.version, s.row_count "
    "FROM objects o LEFT JOIN table_state s ON s.name = o.name "
    "WHERE o.namespace = 'relation' AND o.kind = 'dynamic_table'"
)


def _select_dynamic(conn: sqlite3.Connection, name: str) -> DynamicTableEntry | None:
    row = conn.execute(f"{_DYNAMIC_QUERY} AND o.name = ?", (name,)).fetchone()
    return DynamicTableEntry.from_row(row) if row else None


def _relation_location(conn: sqlite3.Connection, name: str) -> str | None:
    row = conn.execute(
        "SELECT spec FROM objects WHERE namespace = 'relation' AND name = ?", (name,)
    ).fetchone()
    return json.loads(row["spec"])["location"] if row else None


def _select_table(conn: sqlite3.Connection, name: str) -> TableEntry | None:
    row = conn.execute(f"{_TABLES_QUERY} AND o.name = ?", (name,)).fetchone()
    return TableEntry.from_row(row) if row else None


def unknown_table(name: str) -> LakeError:
    return LakeError(
        f"table {name} does not exist",
        "check the name with SHOW TABLES or create it with CREATE TABLE",
    )


def _require_table(conn: sqlite3.Connection, name: str) -> TableEntry:
    entry = _select_table(conn, name)
    if entry is None and _select_dynamic(conn, name) is not None:
        raise LakeError(
            f"{name} is a dynamic table: only its refreshes write it",
            "change its query with CREATE OR REPLACE DYNAMIC TABLE, or read it with SELECT",
        )
    if entry is None:
        raise unknown_table(name)
    return entry
