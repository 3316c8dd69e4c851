"""A table as the catalog keeps it, and the checks its declared key and clustering pass."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import RELATION, CatalogObject, Column, StoredRelation
from lake_assets.core.errors import LakeError
from lake_assets.tables.expectations import Expectation, Quarantined

# Table properties only the catalog keeps: what a load does with columns the table lacks.
SCHEMA_EVOLUTION = "schema_evolution"
RESCUED_DATA_COLUMN = "rescued_data_column"
# Types whose values are not atomic: rows cannot be told apart by them.
_COMPLEX_TYPES = ("ARRAY", "MAP", "STRUCT", "VARIANT")


@dataclass(frozen=True)
class TableEntry(StoredRelation):
    """A Delta table the lakehouse owns; `properties` are the dialect's own (change_tracking);
    `primary_key` is declared for readers (changelog exports), never enforced on writes;
    `cluster_by` names the columns its files are clustered by (empty: not clustered), so that
    readers restricted to a range of them skip files by their statistics; `expectations` are
    the conditions every write judges its rows by (tables.expectations)."""

    NAMESPACE: ClassVar[str] = RELATION
    KIND: ClassVar[str] = "table"
    LABEL: ClassVar[str] = "table"
    SHOW: ClassVar[str] = "SHOW TABLES"
    CREATE: ClassVar[str] = "CREATE TABLE"
    QUARANTINED: ClassVar[Quarantined] = Quarantined.EVERY_WRITE

    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    cluster_by: tuple[str, ...] = ()
    expectations: tuple[Expectation, ...] = ()

    @property
    def change_tracking(self) -> bool:
        return self.properties.get("change_tracking", "false").lower() == "true"

    @property
    def schema_evolution(self) -> bool:
        """Whether loads add the columns their files bring that the table lacks."""
        return self.properties.get(SCHEMA_EVOLUTION, "false") == "true"

    @property
    def rescued_data_column(self) -> str | None:
        """The STRING column loads keep, as JSON, the values of columns the table lacks in."""
        return self.properties.get(RESCUED_DATA_COLUMN) or None


@dataclass(frozen=True)
class ColumnList:
    """What a declared list of a relation's columns is, in the words its errors use."""

    # The words that declare it: PRIMARY KEY (sqlglot reads PRIMARY KEY, and CLUSTER BY, as one
    # token whatever the spacing between the words).
    clause: str
    title: str  # what it is: primary key
    noun: str  # what each of its columns is: key column
    refused_types: tuple[str, ...]  # types none of its columns may have
    why: str  # why those types are refused
    fix: str  # what to declare instead


PRIMARY_KEY = ColumnList(
    "PRIMARY KEY",
    "primary key",
    "key column",
    _COMPLEX_TYPES,
    "a key column must be of an atomic type",
    "key the table by columns of atomic types (numbers, strings, dates, …)",
)
# Delta clusters files by the min/max statistics of these columns, which it keeps for numbers,
# strings, dates and timestamps only, and for a table's first 32 columns.
CLUSTERING = ColumnList(
    "CLUSTER BY",
    "clustering",
    "clustering column",
    (*_COMPLEX_TYPES, "BOOLEAN", "BINARY"),
    "files are clustered by numbers, strings, dates and timestamps only",
    "cluster the table by columns of those types",
)
STATISTICS_COLUMNS = 32


def declared_key(what: str, columns: Sequence[Column], key: Sequence[str]) -> tuple[str, ...]:
    """The key's columns in their declared spelling, so that the catalog matches the schema;
    `what` names the table ("table t") in the errors."""
    return declared_columns(what, columns, key, PRIMARY_KEY)


def clustering_columns(
    what: str, columns: Sequence[Column], names: Sequence[str]
) -> tuple[str, ...]:
    """The columns a table's files are clustered by, in their declared spelling; each must be
    one Delta keeps statistics for."""
    declared = declared_columns(what, columns, names, CLUSTERING)
    positions = {column.name: position for position, column in enumerate(columns, start=1)}
    for name in declared:
        if positions[name] > STATISTICS_COLUMNS:
            raise LakeError(
                f"clustering column {name} of {what} is its column {positions[name]}: files are "
                f"clustered by the statistics Delta keeps for the first {STATISTICS_COLUMNS} "
                "columns only",
                f"cluster the table by columns among its first {STATISTICS_COLUMNS}",
            )
    return declared


def declared_columns(
    what: str, columns: Sequence[Column], names: Sequence[str], kind: ColumnList
) -> tuple[str, ...]:
    """Columns a `kind` of list names, matched case-insensitively and kept in their declared
    spelling; each must be a column of `what` and of a type the list takes."""
    by_name = {column.name.lower(): column for column in columns}
    declared = []
    for name in names:
        column = by_name.get(name.lower())
        if column is None:
            raise LakeError(
                f"{kind.title} column {name} is not a column of {what}",
                f"choose among its columns: {', '.join(column.name for column in columns)}",
            )
        if column.type.upper().split("<")[0] in kind.refused_types:
            raise LakeError(
                f"{kind.title} column {column.name} of {what} is {column.type}: {kind.why}",
                kind.fix,
            )
        declared.append(column.name)
    return tuple(declared)


def table_named(
    catalog: Catalog, name: str, only: str, fix: Callable[[CatalogObject], str]
) -> TableEntry:
    """The table `name`; another kind of relation is refused in one line saying what only a
    table does (`only`) and how to do it for that kind (`fix`)."""
    other = catalog.find_relation(name)
    if other is not None and not isinstance(other, TableEntry):
        raise LakeError(f"{name} is a {other.LABEL}: {only}", fix(other))
    return catalog.get(TableEntry, name)
