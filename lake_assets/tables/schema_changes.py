"""ALTER TABLE's changes to a table's columns, each checked against the table and applied to its
column list without Spark: what the catalog records, what Delta is asked for and the Delta table
feature it needs (column mapping for renames and drops, type widening for wider types)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from lake_assets.core.delta import quote_name, sql_string
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.names import HIDDEN_PREFIX
from lake_assets.sql.types import MAX_DECIMAL_PRECISION

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_DECIMAL = re.compile(r"DECIMAL\((\d+),(\d+)\)")
WIDENINGS = (
    "TINYINT → SMALLINT → INT → BIGINT, an integer or FLOAT → DOUBLE, DATE → TIMESTAMP_NTZ, "
    "DECIMAL(p,s) → DECIMAL(p',s') with no fewer digits before and after the point"
)


class DeltaFeature(StrEnum):
    """The Delta table properties a change needs turned on first (each once, by its own commit)."""

    COLUMN_MAPPING = "delta.columnMapping.mode"
    TYPE_WIDENING = "delta.enableTypeWidening"

    @property
    def turned_on(self) -> str:
        """The property's value that turns the feature on."""
        return "name" if self is DeltaFeature.COLUMN_MAPPING else "true"


@dataclass(frozen=True)
class SchemaChange:
    """One change of a table's columns; `column` is the one it concerns, as the table names it."""

    column: str

    def apply(self, table: str, columns: Sequence[Column]) -> tuple[Column, ...]:
        """The columns after the change; refuses, in one line, a change the table cannot take."""
        raise NotImplementedError

    def delta_clause(self) -> str:
        """What follows `ALTER TABLE delta.`…`` in Delta's SQL."""
        raise NotImplementedError

    def feature(self) -> DeltaFeature | None:
        return None

    def renamed(self) -> dict[str, str]:
        """Old name → new name of the columns this change renames."""
        return {}

    def removes(self) -> tuple[str, ...]:
        """Columns whose values are gone (or read under another name) after the change."""
        return ()

    @property
    def breaks_change_readers(self) -> bool:
        """Whether Delta cannot read the table's changes across it (all but an added column)."""
        return self.feature() is not None

    def describe(self) -> str:
        """The change in words, as its event and result say it."""
        raise NotImplementedError


@dataclass(frozen=True)
class AddColumn(SchemaChange):
    type: str
    comment: str | None = None

    def apply(self, table: str, columns: Sequence[Column]) -> tuple[Column, ...]:
        if _find(columns, self.column) is not None:
            raise LakeError(
                f"table {table} already has a column {self.column}",
                "give the new column another name",
            )
        _not_hidden(self.column)
        return (*columns, Column(self.column, self.type, self.comment))

    def delta_clause(self) -> str:
        comment = f" COMMENT {sql_string(self.comment)}" if self.comment is not None else ""
        return f"ADD COLUMNS ({quote_name(self.column)} {self.type}{comment})"

    def describe(self) -> str:
        return f"added column {self.column} {self.type}"


@dataclass(frozen=True)
class RenameColumn(SchemaChange):
    new_name: str

    def apply(self, table: str, columns: Sequence[Column]) -> tuple[Column, ...]:
        old = _existing(table, columns, self.column)
        clash = _find(columns, self.new_name)
        if clash is not None and clash is not old:
            raise LakeError(
                f"table {table} already has a column {self.new_name}",
                "rename the column to a name the table does not have",
            )
        _not_hidden(self.new_name)
        return tuple(replace(c, name=self.new_name) if c is old else c for c in columns)

    def delta_clause(self) -> str:
        return f"RENAME COLUMN {quote_name(self.column)} TO {quote_name(self.new_name)}"

    def feature(self) -> DeltaFeature:
        return DeltaFeature.COLUMN_MAPPING

    def renamed(self) -> dict[str, str]:
        return {self.column.lower(): self.new_name}

    def removes(self) -> tuple[str, ...]:
        return (self.column,)

    def describe(self) -> str:
        return f"renamed column {self.column} to {self.new_name}"


@dataclass(frozen=True)
class DropColumn(SchemaChange):
    def apply(self, table: str, columns: Sequence[Column]) -> tuple[Column, ...]:
        dropped = _existing(table, columns, self.column)
        if len(columns) == 1:
            raise LakeError(
                f"{self.column} is table {table}'s only column",
                f"drop the table instead: DROP TABLE {table}",
            )
        return tuple(c for c in columns if c is not dropped)

    def delta_clause(self) -> str:
        return f"DROP COLUMN {quote_name(self.column)}"

    def feature(self) -> DeltaFeature:
        return DeltaFeature.COLUMN_MAPPING

    def removes(self) -> tuple[str, ...]:
        return (self.column,)

    def describe(self) -> str:
        return f"dropped column {self.column}"


@dataclass(frozen=True)
class AlterColumnType(SchemaChange):
    type: str

    def apply(self, table: str, columns: Sequence[Column]) -> tuple[Column, ...]:
        old = _existing(table, columns, self.column)
        if old.type == self.type:
            raise LakeError(
                f"column {old.name} of table {table} is {old.type} already", "name another type"
            )
        if not widens(old.type, self.type):
            raise LakeError(
                f"column {old.name} of table {table} cannot change from {old.type} to "
                f"{self.type}: only a wider type keeps every value it holds",
                f"widen it instead ({WIDENINGS}), or add a new column and fill it with UPDATE",
            )
        return tuple(replace(c, type=self.type) if c is old else c for c in columns)

    def delta_clause(self) -> str:
        return f"ALTER COLUMN {quote_name(self.column)} TYPE {self.type}"

    def feature(self) -> DeltaFeature:
        return DeltaFeature.TYPE_WIDENING

    def describe(self) -> str:
        return f"changed column {self.column} to {self.type}"


def widens(old: str, new: str) -> bool:
    """Whether every value of type `old` is a value of type `new` (Delta's type widening)."""
    if old in _INTEGERS and new in _INTEGERS:
        return _INTEGERS.index(new) > _INTEGERS.index(old)
    if new == "DOUBLE":
        return old in (*_INTEGERS, "FLOAT")
    if (old, new) == ("DATE", "TIMESTAMP_NTZ"):
        return True
    before, after = _DECIMAL.fullmatch(old), _DECIMAL.fullmatch(new)
    if before is None or after is None:
        return False
    (precision, scale), (wider, wider_scale) = (
        (int(before[1]), int(before[2])),
        (int(after[1]), int(after[2])),
    )
    digits_kept = wider - wider_scale >= precision - scale and wider_scale >= scale
    return (
        digits_kept
        and wider <= MAX_DECIMAL_PRECISION
        and (wider, wider_scale)
        != (
            precision,
            scale,
        )
    )


def _find(columns: Sequence[Column], name: str) -> Column | None:
    return next((c for c in columns if c.name.lower() == name.lower()), None)


def _existing(table: str, columns: Sequence[Column], name: str) -> Column:
    found = _find(columns, name)
    if found is None:
        raise LakeError(
            f"table {table} has no column {name}",
            f"check its columns with DESC {table}",
        )
    return found


def _not_hidden(name: str) -> None:
    if name.lower().startswith(HIDDEN_PREFIX):
        raise LakeError(
            f"column names starting with {HIDDEN_PREFIX} are the lakehouse's own: {name}",
            "give the column another name",
        )


@dataclass(frozen=True)
class RestoreColumns(SchemaChange):
    """RESTORE to a version whose columns differ: `restored` are that version's, `removed` the
    columns of today that it lacks."""

    restored: tuple[Column, ...] = ()
    removed: tuple[str, ...] = ()
    version: int = 0

    def apply(self, table: str, columns: Sequence[Column]) -> tuple[Column, ...]:
        return self.restored

    def removes(self) -> tuple[str, ...]:
        return self.removed

    @property
    def breaks_change_readers(self) -> bool:
        return True

    def describe(self) -> str:
        return f"restored the columns of version {self.version}"
