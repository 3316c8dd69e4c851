"""A table as the catalog keeps it, and the check every declared primary key passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from lake_assets.core.entries import RELATION, Column, StoredRelation
from lake_assets.core.errors import LakeError

# Types whose values are not atomic: rows cannot be told apart by them.
_COMPLEX_TYPES = ("ARRAY", "MAP", "STRUCT", "VARIANT")


@dataclass(frozen=True)
class TableEntry(StoredRelation):
    """A Delta table the lakehouse owns; `properties` are the dialect's own (change_tracking);
    `primary_key` is declared for readers (changelog exports), never enforced on writes."""

    NAMESPACE: ClassVar[str] = RELATION
    KIND: ClassVar[str] = "table"
    LABEL: ClassVar[str] = "table"
    SHOW: ClassVar[str] = "SHOW TABLES"
    CREATE: ClassVar[str] = "CREATE TABLE"

    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def change_tracking(self) -> bool:
        return self.properties.get("change_tracking", "false").lower() == "true"


def declared_key(what: str, columns: Sequence[Column], key: Sequence[str]) -> tuple[str, ...]:
    """The key's columns in their declared spelling, so that the catalog matches the schema;
    `what` names the table ("table t") in the errors."""
    by_name = {column.name.lower(): column for column in columns}
    declared = []
    for name in key:
        column = by_name.get(name.lower())
        if column is None:
            raise LakeError(
                f"primary key column {name} is not a column of {what}",
                f"choose among its columns: {', '.join(column.name for column in columns)}",
            )
        if column.type.upper().split("<")[0] in _COMPLEX_TYPES:
            raise LakeError(
                f"primary key column {column.name} of {what} is {column.type}: a key column "
                "must be of an atomic type",
                "key the table by columns of atomic types (numbers, strings, dates, …)",
            )
        declared.append(column.name)
    return tuple(declared)
