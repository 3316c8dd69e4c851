"""Pipes' load history: every file's load (or failure) rides in its load commit's record and is
indexed here, per table, with a mark of the newest commit indexed, so that COPY INTO knows what
it loaded without reading the log and the index can be caught up from the log after a crash."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import sqlalchemy as sa

from lake_assets.core.catalog import Catalog
from lake_assets.core.database import TEXT, owned_table
from lake_assets.core.entries import RELATION, typed
from lake_assets.core.history import stored
from resources.storage import FileInfo

# The first key of a load commit's record.
LOAD_MARKER = "lake_load"


class LoadStatus(StrEnum):
    """A file's load, in load history."""

    @property
    def loaded(self) -> bool:
        """Whether the file's rows are committed."""
        return self in (LoadStatus.LOADED, LoadStatus.PARTIALLY_LOADED)

    LOADED = "LOADED"
    # Loaded with some records rejected (ON_ERROR = CONTINUE, or under SKIP_FILE's limit).
    PARTIALLY_LOADED = "PARTIALLY_LOADED"
    LOAD_FAILED = "LOAD_FAILED"
    # Loaded before and changed since: not loaded again (no RELOAD_CHANGED); one record a change.
    SKIPPED_CHANGED = "SKIPPED_CHANGED"


@dataclass(frozen=True)
class LoadRecord:
    """One file's load: LOADED or LOAD_FAILED, or SKIPPED_CHANGED (no rows, no commit)."""

    file_path: str
    last_copy_time: str
    file_size: int | None
    file_modified: str | None
    status: LoadStatus
    rows_loaded: int
    first_error_message: str | None
    pipe_name: str | None
    commit_version: int | None
    rows_rejected: int = 0


@dataclass(frozen=True)
class RejectedRow:
    """A record a load rejected, kept beside its file's load record."""

    file_path: str
    row_number: int
    column_name: str | None
    error: str
    raw_record: str | None
    pipe_name: str | None
    commit_version: int


_load_history = owned_table(
    "load_history",
    (RELATION, "table_name"),
    sa.Column("table_name", TEXT, nullable=False),
    sa.Column("file_path", TEXT, nullable=False),
    sa.Column("last_copy_time", TEXT, nullable=False),
    sa.Column("file_size", sa.BigInteger),
    sa.Column("file_modified", TEXT),
    sa.Column("status", TEXT, nullable=False),
    sa.Column("rows_loaded", sa.BigInteger, nullable=False),
    sa.Column("first_error_message", TEXT),
    sa.Column("pipe_name", TEXT),
    sa.Column("commit_version", sa.BigInteger),
    sa.Column("rows_rejected", sa.BigInteger, nullable=False, server_default="0"),
    sa.Index("load_history_by_path", "table_name", "file_path"),
    sa.Index("load_history_by_commit", "table_name", "file_path", "commit_version", unique=True),
)
_rejected_rows = owned_table(
    "rejected_rows",
    (RELATION, "table_name"),
    sa.Column("table_name", TEXT, nullable=False),
    sa.Column("file_path", TEXT, nullable=False),
    sa.Column("row_number", sa.BigInteger, nullable=False),
    sa.Column("column_name", TEXT),
    sa.Column("error", TEXT, nullable=False),
    sa.Column("raw_record", TEXT),
    sa.Column("pipe_name", TEXT),
    sa.Column("commit_version", sa.BigInteger, nullable=False),
    sa.Index(
        "rejected_rows_by_load",
        "table_name",
        "commit_version",
        "file_path",
        "row_number",
        unique=True,
    ),
)
_load_marks = owned_table(
    "load_marks",
    (RELATION, "table_name"),
    sa.Column("table_name", TEXT, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
)


def file_record(
    info: FileInfo, now: str, status: LoadStatus, rows: int, error: str | None, pipe: str | None,
    version: int | None,
) -> LoadRecord:  # fmt: skip
    """A file's record as the load saw the file."""
    return LoadRecord(
        info.url, now, info.size, info.last_modified.isoformat(), status, rows, error, pipe, version
    )


def record_loads(
    catalog: Catalog,
    table: str,
    records: list[LoadRecord],
    version: int | None,
    rejected: list[RejectedRow] | None = None,
) -> None:
    """Add load records and rejected records (a commit's only once); `version` moves the
    table's mark."""
    insert = catalog.database.insert
    with catalog.database.writing() as conn:
        for kept, rows in ((_load_history, records), (_rejected_rows, rejected)):
            if rows:
                conn.execute(
                    insert(kept).on_conflict_do_nothing(),
                    [{"table_name": table, **stored(row)} for row in rows],
                )
        if version is not None:
            mark = insert(_load_marks).values(table_name=table, version=version)
            conn.execute(
                mark.on_conflict_do_update(
                    index_elements=[_load_marks.c.table_name],
                    set_={"version": mark.excluded.version},
                    where=mark.excluded.version > _load_marks.c.version,
                )
            )


def rejected_rows(catalog: Catalog, table: str, since: str | None = None) -> list[RejectedRow]:
    """The table's rejected records, newest load first, each file's in their order; `since` (an
    ISO time) keeps those whose load record has not expired."""
    loads = _load_history.c
    kept = sa.exists().where(
        loads.table_name == _rejected_rows.c.table_name,
        loads.file_path == _rejected_rows.c.file_path,
        loads.commit_version == _rejected_rows.c.commit_version,
        loads.last_copy_time >= (since or ""),
    )
    with catalog.database.reading() as conn:
        rows = conn.execute(
            sa.select(_rejected_rows)
            .where(_rejected_rows.c.table_name == table, kept)
            .order_by(
                _rejected_rows.c.commit_version.desc(),
                _rejected_rows.c.file_path,
                _rejected_rows.c.row_number,
            )
        ).all()
    return [typed(RejectedRow, row._asdict()) for row in rows]


def load_mark(catalog: Catalog, table: str) -> int:
    """The newest commit version whose load records are in the index (-1: none)."""
    with catalog.database.reading() as conn:
        version = conn.execute(
            sa.select(_load_marks.c.version).where(_load_marks.c.table_name == table)
        ).scalar()
    return -1 if version is None else version


def load_history(catalog: Catalog, table: str, since: str | None = None) -> list[LoadRecord]:
    """Records newest first; `since` (an ISO time) drops the expired ones."""
    with catalog.database.reading() as conn:
        rows = conn.execute(
            sa.select(_load_history)
            .where(
                _load_history.c.table_name == table,
                _load_history.c.last_copy_time >= (since or ""),
            )
            .order_by(_load_history.c.last_copy_time.desc(), _load_history.c.file_path)
        ).all()
    return [typed(LoadRecord, row._asdict()) for row in rows]
