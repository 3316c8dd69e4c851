"""A lakehouse session: runs the dialect's statements against the catalog and Spark.

Each statement goes to the kind that owns it (`lake_assets.kinds`); queries, and the SHOW /
DESC / DROP forms every kind shares, are dispatched here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.sql import DataFrame, Row, SparkSession
from sqlglot import exp

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject, StoredRelation
from lake_assets.core.errors import LakeError
from lake_assets.core.kind import Consumption, Handler
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.core.spark_errors import translate_spark_error
from lake_assets.kinds import BY_NAME, GRAMMAR, KINDS
from lake_assets.sql.binding import bind_tables, referenced_tables
from lake_assets.sql.grammar import Grammar, StatementError
from lake_assets.sql.merge import standard_merge
from lake_assets.sql.statements import (
    DescribeObject,
    Dml,
    DropObject,
    Query,
    ShowObjects,
    Source,
    Statement,
)
from lake_assets.sql.subqueries import subquery_merge

T = TypeVar("T")
_HANDLERS: dict[type, Handler] = {
    statement: handler for kind in KINDS for statement, handler in kind.handlers.items()
}
_SENSORS = frozenset(sensor for kind in KINDS for sensor in kind.sensors)
_CONSUMPTIONS = {
    kind.consumption.of: kind.consumption for kind in KINDS if kind.consumption is not None
}
_READERS = {source: reader for kind in KINDS for source, reader in kind.readers.items()}


@dataclass(frozen=True)
class Bound:
    """A statement as Spark SQL, and what it reads of consumed relations (streams), each pinned
    by its kind's consumption when the statement was bound."""

    sql: str
    session: LakeSession
    pinned: tuple[tuple[Consumption, object], ...] = ()

    @property
    def reads(self) -> tuple[object, ...]:
        return tuple(read for _, read in self.pinned)

    def consuming(
        self, location: str, after: int, record: dict[str, Any]
    ) -> AbstractContextManager[None]:
        """A write to the table at `location` (read at version `after`) that commits `record`:
        what it read moves with it, and only with it."""
        return self._consumed(
            lambda consumption, reads: consumption.consuming(
                self.session, reads, location, after, record
            )
        )

    def exporting(self, volume: str, path: str, tag: str) -> AbstractContextManager[None]:
        """An export of the file `path` (named from `tag`) to `volume`: what it read moves with
        it, and only with it."""
        return self._consumed(
            lambda consumption, reads: consumption.exporting(self.session, reads, volume, path, tag)
        )

    @contextmanager
    def _consumed(
        self, enter: Callable[[Consumption, list[object]], AbstractContextManager[None]]
    ) -> Iterator[None]:
        """Each kind's consumption around the one write, with the reads of its kind."""
        by_kind: dict[Consumption, list[object]] = {}
        for consumption, read in self.pinned:
            by_kind.setdefault(consumption, []).append(read)
        with ExitStack() as stack:
            for consumption, reads in by_kind.items():
                stack.enter_context(enter(consumption, reads))
            yield


class LakeSession:
    """Statements that only read the catalog (SHOW, DESC) never start Spark."""

    def __init__(
        self,
        catalog: Catalog,
        settings: LakeSettings,
        spark: Callable[[], SparkSession],
        changed: Callable[[str], None] | None = None,
    ) -> None:
        """`changed` hears the name of every table or dynamic table a statement committed to."""
        self.catalog = catalog
        self.settings = settings
        self.warehouse = settings.warehouse
        self._spark = spark
        self._changed = changed

    @property
    def spark(self) -> SparkSession:
        return self._spark()

    @property
    def grammar(self) -> Grammar:
        return GRAMMAR

    def warehouse_path(self, *parts: str) -> str:
        """Where a new Delta table goes: under LAKE_WAREHOUSE (`s3a://…`) or the local warehouse,
        each part one folder name, so that no name leads outside it."""
        for part in parts:
            if part in ("", ".", "..") or "/" in part or "\\" in part:
                raise LakeError(
                    f"'{part}' would lead outside the warehouse",
                    "name the object with letters, digits and '_' only",
                )
        return "/".join([self.settings.warehouse_location, *parts])

    def sql(self, text: str) -> list[Result]:
        """Run a script and collect every result (`run` streams query rows instead)."""
        results = []
        for result in self.run(text):
            result.rows = list(result.rows)
            results.append(result)
        return results

    def run(self, text: str) -> Iterator[Result]:
        """Parse the whole script first, so a typo in its last statement stops all of it."""
        statements = GRAMMAR.parse_script(text)
        for number, statement in enumerate(statements, start=1):
            try:
                result = self.execute(statement)
            except LakeError as error:
                raise StatementError(number, error) from error
            result.rows = _numbered(result.rows, number)
            yield result

    def execute(self, statement: Statement) -> Result:
        """Run one statement; Spark failures come back as LakeErrors that name our tables."""
        try:
            return self._dispatch(statement)
        except LakeError:
            raise
        except Exception as error:
            raise self._translate(error) from error

    def _translate(self, error: Exception) -> Exception:
        locations = self.catalog.relation_locations()
        return translate_spark_error(error, locations) or error

    def _stream(self, rows: Iterator[Row]) -> Iterator[Row]:
        """Query rows, with failures found while reading them translated too."""
        try:
            yield from rows
        except LakeError:
            raise
        except Exception as error:
            raise self._translate(error) from error

    def _dispatch(self, statement: Statement) -> Result:
        match statement:
            case Query():
                bound = self.bind(statement)  # before Spark: unknown names fail without a JVM
                frame = self.spark.sql(bound.sql)
                return Result(frame.columns, self._stream(frame.toLocalIterator()))
            case ShowObjects(kind=kind):
                show = BY_NAME[kind].show
                assert show is not None
                return show(self)
            case DescribeObject(kind=kind):
                describe = BY_NAME[kind].describe
                assert describe is not None
                return describe(self, statement)
            case DropObject(kind=kind):
                drop = BY_NAME[kind].drop
                assert drop is not None
                return drop(self, statement)
        return _HANDLERS[type(statement)](self, statement)

    def sensor_names(self) -> frozenset[str]:
        return _SENSORS

    def committing(self, name: str, run: Callable[[], T]) -> T:
        """Run a statement that may commit to `name`; tell `changed` when its version moved."""
        before = self._written(name).version
        result = run()
        if self._written(name).version != before:
            self.committed(name)
        return result

    def committed(self, name: str) -> None:
        if self._changed is not None:
            self._changed(name)

    def _written(self, name: str) -> StoredRelation:
        """The table or dynamic table a statement writes; a stream is refused in its own words
        (COPY INTO s, REFRESH DYNAMIC TABLE s), as INSERT INTO s is."""
        return self.catalog.stored(name)

    def bind(self, statement: Query | Dml) -> Bound:
        """Spark SQL with catalog tables as Delta paths, streams and views as the queries they
        stand for, and special sources as temporary views."""
        relations = {
            name: self.catalog.relation(name) for name in referenced_tables(statement.expression)
        }
        expression = statement.expression
        if isinstance(statement, Dml):
            expression = self._dml_expression(statement, relations)
        narrowed = {
            name: shown
            for name, relation in relations.items()
            if isinstance(relation, StoredRelation) and (shown := relation.shown_columns())
        }
        pinned = {
            name: (consumption, consumption.pin(self, name))
            for name, relation in relations.items()
            if (consumption := _CONSUMPTIONS.get(type(relation))) is not None
        }
        queries = {name: pin.query() for name, (_, pin) in pinned.items()}
        # A view is read as the query it stands for, bound the same way (views over views too).
        queries.update(
            {
                name: self._bound_query(text)
                for name, relation in relations.items()
                if (text := relation.stands_for()) is not None
            }
        )
        locations = {
            name: relation.location
            for name, relation in relations.items()
            if isinstance(relation, StoredRelation)
        }
        bound = bind_tables(expression, locations.__getitem__, narrowed, queries)
        for placeholder, source in statement.sources.items():
            self._source_frame(source).createOrReplaceTempView(placeholder)
        return Bound(bound, self, tuple((c, pin.read) for c, pin in pinned.values()))

    def _bound_query(self, text: str) -> str:
        """A view's query as Spark SQL: parsed, and so checked as user SQL, each time it is read."""
        statement = GRAMMAR.spark(text)
        assert isinstance(statement, Query), "CREATE VIEW kept a SELECT"
        return self.bind(statement).sql

    def _dml_expression(self, statement: Dml, relations: dict[str, CatalogObject]) -> exp.Expr:
        """A DML statement's expression, refused when it writes a stream; a MERGE takes its
        standard meaning (see sql.merge), and an UPDATE or DELETE with subqueries in its WHERE,
        which Delta refuses, becomes the MERGE that means the same (see sql.subqueries)."""
        target = relations.get(statement.target)
        if target is not None and not isinstance(target, StoredRelation):
            raise target.mistaken_for(StoredRelation)
        expression = statement.expression
        if isinstance(expression, exp.Merge) and isinstance(target, StoredRelation):
            return standard_merge(expression, [c.name for c in target.columns])
        return subquery_merge(expression)

    def _source_frame(self, source: Source) -> DataFrame:
        return _READERS[type(source)](self, source)


def _numbered(rows: Iterable[Sequence[Any]], number: int) -> Iterator[Sequence[Any]]:
    """Rows whose failures, found only while reading them, still name their statement."""
    try:
        yield from rows
    except StatementError:
        raise
    except LakeError as error:
        raise StatementError(number, error) from error
