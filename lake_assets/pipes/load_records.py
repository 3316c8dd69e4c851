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

# The first key of a load commit's record.
LOAD_MARKER = "lake_load"


class LoadStatus(StrEnum):
    """A file's load, in load history."""

    LOADED = "LOADED"
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
    sa.Index("load_history_by_path", "table_name", "file_path"),
    sa.Index("load_history_by_commit", "table_name", "file_path", "commit_version", unique=True),
)
_load_marks = owned_table(
    "load_marks",
    (RELATION, "table_name"),
    sa.Column("table_name", TEXT, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
)


def record_loads(
    catalog: Catalog, table: str, records: list[LoadRecord], version: int | None
) -> None:
    """Add load records (a commit's records only once); `version` moves the table's mark."""
    insert = catalog.database.insert
    with catalog.database.writing() as conn:
        if records:
            conn.execute(
                insert(_load_history).on_conflict_do_nothing(),
                [{"table_name": table, **stored(record)} for record in records],
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
