"""What an object kind brings to the house (its SQL, the handlers of its statements, its Dagster
definitions) and what its handlers are given (`Context`). `lake_assets.kinds` lists the kinds;
nothing else enumerates them, and no kind imports the session that runs them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pyspark.sql import DataFrame, SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.sql.grammar import Grammar, ObjectWords, SourceParser, StatementParser
from lake_assets.sql.statements import DescribeObject, Dml, DropObject, Query, Statement

T = TypeVar("T")


class Bound(Protocol):
    """A statement bound to the catalog as Spark SQL, with the stream ranges it reads."""

    @property
    def sql(self) -> str: ...

    @property
    def reads(self) -> Sequence[object]:
        """The stream ranges it reads (empty when it reads no stream)."""
        ...

    def consuming(
        self, location: str, after: int, record: dict[str, Any]
    ) -> AbstractContextManager[None]:
        """A write to the table at `location` that commits `record`: the streams it read move
        with it, and only with it."""
        ...

    def exporting(self, volume: str, path: str, tag: str) -> AbstractContextManager[None]:
        """An export of the file `path` to `volume`: the streams it read move with it."""
        ...


class Context(Protocol):
    """What every handler and engine is given: the lakehouse's catalog, settings and Spark, and
    the session's own steps that statements share."""

    @property
    def catalog(self) -> Catalog: ...

    @property
    def settings(self) -> LakeSettings: ...

    @property
    def spark(self) -> SparkSession: ...

    @property
    def grammar(self) -> Grammar: ...

    def warehouse_path(self, *parts: str) -> str:
        """Where a new Delta table goes, each part one folder name inside the warehouse."""
        ...

    def committing(self, name: str, run: Callable[[], T]) -> T:
        """Run a statement that may commit to the table `name`, so that its change is heard."""
        ...

    def committed(self, name: str) -> None:
        """Say that the relation `name` was just written (a CREATE that filled it)."""
        ...

    def bind(self, statement: Query | Dml) -> Bound: ...

    def sensor_names(self) -> frozenset[str]:
        """The project's own sensors, of every kind."""
        ...

    def execute(self, statement: Statement) -> Result: ...


class Pinned(Protocol):
    """What a statement reads of a consumed relation, fixed when the statement is bound."""

    @property
    def read(self) -> object: ...

    def query(self) -> str:
        """The range as Spark SQL, for the statement to read in its place."""
        ...


@dataclass(frozen=True)
class Consumption:
    """How statements consume relations of a kind (streams): what a statement reads is pinned
    when it is bound, and moves on only with the write (or export) the statement lands."""

    of: type[CatalogObject]
    pin: Callable[[Context, str], Pinned]
    consuming: Callable[
        [Context, Sequence[Any], str, int, dict[str, Any]], AbstractContextManager[None]
    ]
    exporting: Callable[[Context, Sequence[Any], str, str, str], AbstractContextManager[None]]


class Sessions(Protocol):
    """How a kind's Dagster definitions open a session for a run; `changed` hears each table
    a statement committed to."""

    def __call__(
        self,
        catalog: Catalog,
        settings: LakeSettings,
        spark: Callable[[], SparkSession],
        changed: Callable[[str], None] | None = None,
    ) -> Context: ...


Handler = Callable[[Context, Any], Result]
SourceReader = Callable[[Context, Any], DataFrame]


@dataclass(frozen=True)
class Kind:
    """One object kind. `words` is how SHOW / DESC / DROP spell it (None: it spells its own)."""

    name: str
    statements: Mapping[tuple[str, ...], StatementParser] = field(default_factory=dict)
    handlers: Mapping[type, Handler] = field(default_factory=dict)
    sources: Mapping[str, SourceParser] = field(default_factory=dict)
    readers: Mapping[type, SourceReader] = field(default_factory=dict)
    words: ObjectWords | None = None
    show: Callable[[Context], Result] | None = None
    describe: Callable[[Context, DescribeObject], Result] | None = None
    drop: Callable[[Context, DropObject], Result] | None = None
    # The module whose `build_defs(catalog, settings, sessions)` makes the kind's Dagster
    # definitions; named, not imported, so that `lake sql` never imports Dagster.
    defs: str | None = None
    # The names of the kind's own Dagster sensors, which a pipe (a sensor of its own name) may
    # not take.
    sensors: tuple[str, ...] = ()
    consumption: Consumption | None = None
