"""What the catalog stores: each kind's entry is a frozen dataclass serialized one way, as JSON."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

from lake_assets.core.errors import LakeError

R = TypeVar("R")

RELATION = "relation"


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None = None


@dataclass(frozen=True)
class CatalogObject:
    """An object stored as JSON under (namespace, name). Relations (tables, dynamic tables, …)
    share one namespace, so that one name means one thing in a query."""

    NAMESPACE: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    LABEL: ClassVar[str] = ""
    SHOW: ClassVar[str] = ""
    CREATE: ClassVar[str] = ""
    # Fields that name other objects, and those objects' namespace: DROP refuses while used.
    REFERENCES: ClassVar[dict[str, str]] = {}
    # Fields kept beside the spec (a relation's version and row count), not in it.
    STATE: ClassVar[tuple[str, ...]] = ()
    # Fields that move as the object works (a stream's offset, a task's run under way): kept in
    # the spec, but not part of what the Dagster definitions are built from.
    RUNTIME: ClassVar[tuple[str, ...]] = ()
    # Every kind of object, by KIND (filled as the kinds' entry modules are imported).
    KINDS: ClassVar[dict[str, type[CatalogObject]]] = {}

    name: str
    created_at: str = field(default="", kw_only=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind():  # not a shared base such as StoredRelation
            CatalogObject.KINDS[cls.kind()] = cls

    @classmethod
    def kind(cls) -> str:
        return cls.KIND or cls.NAMESPACE

    def to_spec(self, *, declared_only: bool = False) -> str:
        """The JSON stored for the entry; `declared_only` leaves out the RUNTIME fields too."""
        spec = asdict(self)
        for key in ("name", "created_at", *self.STATE, *(self.RUNTIME if declared_only else ())):
            spec.pop(key)
        return json.dumps(spec)

    @classmethod
    def from_spec(cls, name: str, created_at: str, spec: str, **state: Any) -> CatalogObject:
        hints = get_type_hints(cls)
        values = {
            key: _decoded(hints[key], value)
            for key, value in json.loads(spec).items()
            if key in hints
        }
        return cls(name=name, created_at=created_at, **values, **state)

    @classmethod
    def unknown(cls, name: str) -> LakeError:
        return LakeError(
            f"{cls.LABEL} {name} does not exist",
            f"check the name with {cls.SHOW} or create it with {cls.CREATE}",
        )

    def event_queues_read(self) -> tuple[str, ...]:
        """The volumes whose event queue this object reads (and so owns: SQS hands a message to
        one reader)."""
        return ()

    def columns_read(
        self, relation: str, columns_of: Callable[[str], Sequence[str]]
    ) -> frozenset[str]:
        """The columns of `relation` (lower-cased) this object names, so that renaming or dropping
        one would break it; `columns_of` gives any relation's columns."""
        return frozenset()

    def stands_for(self) -> str | None:
        """The query a relation with no data of its own (a view) stands for, read in its place
        wherever a statement names it; None for a relation with data."""
        return None

    def reads_changes(self, relation: str) -> bool:
        """Whether this object reads `relation`'s changes as they come (a stream, an export):
        Delta's change reader cannot read across a rename, drop or type change."""
        return False

    def following(self, relation: str, new_name: str) -> CatalogObject | None:
        """This object once `relation` is renamed `new_name`, if it follows `relation` through
        a rename (None: it does not, or it names it and so refuses the rename)."""
        return None

    def mistaken_for(self, wanted: type[CatalogObject]) -> LakeError:
        """The error when a statement for a `wanted` names this object instead."""
        return LakeError(
            f"{self.name} is a {self.LABEL}, not a {wanted.LABEL}",
            f"use the statements for a {self.LABEL}, or pick another name",
        )


@dataclass(frozen=True)
class StoredRelation(CatalogObject):
    """A relation kept as a Delta table of its own (a table, a dynamic table), as statements that
    read its files or declare its key need it; `primary_key` is declared for readers (changelog
    exports), never enforced; its version and row count are catalog state."""

    LABEL: ClassVar[str] = "table"
    STATE: ClassVar[tuple[str, ...]] = ("version", "row_count")

    location: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = field(default=(), kw_only=True)
    version: int | None = field(default=None, kw_only=True)
    row_count: int | None = field(default=None, kw_only=True)
    # The version of the newest change of its columns, and that change in words: readers of its
    # changes from before it (dynamic tables) recompute, and its event says what changed.
    schema_version: int | None = field(default=None, kw_only=True)
    schema_change: str | None = field(default=None, kw_only=True)

    def shown_columns(self) -> list[str]:
        """The columns a query sees, when the table keeps some from it (empty: all of them)."""
        return []


def typed(record: type[R], values: Mapping[str, Any]) -> R:
    """A dataclass from stored values, each in the shape its field is typed with (enums, tuples,
    int-keyed dicts); values it has no field for are left out."""
    hints = get_type_hints(record)
    return record(
        **{key: _decoded(hints[key], value) for key, value in values.items() if key in hints}
    )


def _decoded(hint: Any, value: Any) -> Any:
    """A JSON value back in the shape its field is typed with (tuples, nested dataclasses)."""
    origin = get_origin(hint)
    if value is None:
        return None
    if origin in (Union, types.UnionType):
        return _decoded(next(arg for arg in get_args(hint) if arg is not type(None)), value)
    if origin is tuple:
        return tuple(_decoded(get_args(hint)[0], item) for item in value)
    if origin is dict:
        # JSON keys are text: an int-keyed dict (Kafka offsets by partition) gets its ints back.
        key, item = get_args(hint)
        return {key(k): _decoded(item, v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if is_dataclass(hint) and isinstance(hint, type):
        inner = get_type_hints(hint)
        return hint(
            **{
                f.name: _decoded(inner[f.name], value[f.name])
                for f in fields(hint)
                if f.name in value
            }
        )
    return value
