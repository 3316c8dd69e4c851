"""A kind's history in the catalog: records of runs (refreshes, task runs), each kept once by its
id and listed newest first, so that SHOW … HISTORY reads them without Spark."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from enum import Enum
from typing import Any, Generic, TypeVar

import sqlalchemy as sa

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import typed

R = TypeVar("R")


def stored(record: Any) -> dict[str, Any]:
    """A record's row: enums as their values, dicts and lists as JSON."""
    return {key: _column_value(value) for key, value in asdict(record).items()}


def _column_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value


def loaded(record: type[R], row: sa.Row) -> R:
    """A record from its row, JSON columns parsed and each value typed as its field."""
    values = {
        key: json.loads(value) if isinstance(value, str) and _is_json(record, key) else value
        for key, value in row._asdict().items()
    }
    return typed(record, values)


def _is_json(record: type, key: str) -> bool:
    hints = {field.name: str(field.type) for field in fields(record)}
    return hints.get(key, "").startswith(("dict", "list"))


class History(Generic[R]):
    """Records of one kind in `table`, keyed by `id`, ordered by the columns in `newest`."""

    def __init__(self, table: sa.Table, record: type[R], newest: tuple[str, ...]) -> None:
        self._table = table
        self._record = record
        self._order = [self._table.c[column].desc() for column in newest]

    def record(self, catalog: Catalog, record: R) -> None:
        """Add a record; one already recorded (same id) is kept as is."""
        insert = catalog.database.insert(self._table).values(stored(record))
        with catalog.database.writing() as conn:
            conn.execute(insert.on_conflict_do_nothing())

    def newest_first(self, catalog: Catalog, name: str | None = None) -> list[R]:
        """The records of one object, or of all."""
        query = sa.select(self._table).order_by(*self._order, self._table.c.id)
        if name is not None:
            query = query.where(self._table.c.name == name)
        with catalog.database.reading() as conn:
            rows = conn.execute(query).all()
        return [loaded(self._record, row) for row in rows]
