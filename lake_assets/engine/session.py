"""A lakehouse session: runs the seed dialect's statements against the catalog and Spark."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from pyspark.sql import DataFrame, Row, SparkSession

from lake_assets.engine import dynamic, objects, pipes, tables, volumes
from lake_assets.engine.dml import run_dml
from lake_assets.engine.load_history import load_history_frame
from lake_assets.engine.results import Result
from lake_assets.engine.spark_errors import translate_spark_error
from lake_assets.sql.binding import bind_tables, referenced_tables
from lake_assets.sql.parser import StatementError, parse_script
from lake_assets.sql.statements import (
    AlterDynamicTable,
    AlterPipe,
    AlterTableProperties,
    CopyIntoTable,
    CopyIntoVolume,
    CreateConnection,
    CreateDynamicTable,
    CreatePipe,
    CreateTable,
    CreateVolume,
    DescribeDynamicTable,
    DescribeHistory,
    DescribeObject,
    DescribeTable,
    DirectorySource,
    Dml,
    DropDynamicTable,
    DropObject,
    DropTable,
    LoadHistorySource,
    Query,
    RefreshDynamicTable,
    RefreshVolume,
    ShowDynamicTables,
    ShowObjects,
    ShowRefreshHistory,
    ShowTables,
    Source,
    Statement,
)
from resources.catalog import Catalog, DynamicTableEntry
from resources.entries import PipeEntry, VolumeEntry
from resources.errors import LakeError
from resources.settings import LakeSettings


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

    def sql(self, text: str) -> list[Result]:
        """Run a script and collect every result (`run` streams query rows instead)."""
        results = []
        for result in self.run(text):
            result.rows = list(result.rows)
            results.append(result)
        return results

    def run(self, text: str) -> Iterator[Result]:
        """Parse the whole script first, so a typo in its last statement stops all of it."""
        statements = parse_script(text)
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
        locations = tables.table_locations([*self.catalog.tables(), *self.catalog.dynamic_tables()])
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
        catalog, settings = self.catalog, self.settings
        match statement:
            case CreateTable():
                return tables.create_table(self.spark, catalog, self.warehouse, statement)
            case DropTable():
                return tables.drop_table(catalog, statement)
            case AlterTableProperties():
                return tables.alter_properties(self.spark, catalog, statement)
            case DescribeTable():
                return tables.describe_table(catalog, statement)
            case DescribeHistory():
                return tables.describe_history(self.spark, catalog, statement)
            case ShowTables():
                return tables.show_tables(catalog)
            case Dml():
                bound = self._bind(statement)  # before Spark: unknown names fail without a JVM
                return self._committing(
                    statement.target, lambda: run_dml(self.spark, catalog, statement, bound)
                )
            case Query():
                bound = self._bind(statement)
                frame = self.spark.sql(bound)
                return Result(frame.columns, self._stream(frame.toLocalIterator()))
            case CreateConnection():
                return volumes.create_connection(catalog, settings, statement)
            case CreateVolume():
                return volumes.create_volume(self.spark, catalog, settings, statement)
            case RefreshVolume():
                volume = catalog.get_object(VolumeEntry, statement.name)
                store = volumes.store_of(catalog, settings, volume)
                return Result.status(volumes.refresh_directory(self.spark, volume, store))
            case CopyIntoVolume():
                return self._copy_into_volume(statement)
            case CopyIntoTable():
                return self._committing(
                    statement.table,
                    lambda: pipes.copy_into_table(self.spark, catalog, settings, statement),
                )
            case CreatePipe():
                return pipes.create_pipe(catalog, settings, statement)
            case AlterPipe():
                return self._alter_pipe(statement)
            case ShowObjects() | DescribeObject() | DropObject():
                return objects.manage(catalog, settings, statement)
            case CreateDynamicTable():
                return dynamic.create_dynamic_table(self.spark, catalog, self.warehouse, statement)
            case RefreshDynamicTable():
                return self._committing(
                    statement.name,
                    lambda: Result.status(
                        dynamic.refresh(self.spark, catalog, statement.name).summary()
                    ),
                )
            case DropDynamicTable():
                return dynamic.drop_dynamic_table(catalog, statement)
            case ShowDynamicTables():
                return dynamic.show_dynamic_tables(catalog)
            case DescribeDynamicTable():
                return dynamic.describe_dynamic_table(catalog, statement)
            case ShowRefreshHistory():
                return dynamic.show_refresh_history(catalog, statement)
            case AlterDynamicTable():
                return dynamic.alter_dynamic_table(catalog, statement)
        raise AssertionError(f"no handler for {statement!r}")

    def _committing(self, name: str, run: Callable[[], Result]) -> Result:
        """Run a statement that may commit to `name`; tell `changed` when its version moved."""
        before = self.catalog.relation(name).version
        result = run()
        if self._changed is not None and self.catalog.relation(name).version != before:
            self._changed(name)
        return result

    def _copy_into_volume(self, statement: CopyIntoVolume) -> Result:
        volume = self.catalog.get_object(VolumeEntry, statement.volume)
        store = volumes.store_of(self.catalog, self.settings, volume)
        if statement.table is not None:
            location = self.catalog.table(statement.table).location
            frame = self.spark.read.format("delta").load(location)
        else:
            frame = self.spark.sql(self._bind(statement.query))
        staging = self.settings.lake_home / "tmp"
        return volumes.copy_into_volume(self.spark, volume, store, frame, statement, staging)

    def _alter_pipe(self, statement: AlterPipe) -> Result:
        pipe = self.catalog.get_object(PipeEntry, statement.name)
        if statement.refresh:
            outcome = pipes.ingest(
                self.spark, self.catalog, self.settings, pipes.pipe_copy(pipe), pipe.name
            )
            return Result.status(outcome.summary())
        self.catalog.update_object(replace(pipe, paused=bool(statement.paused)))
        state = "PAUSED" if statement.paused else "RUNNING"
        return Result.status(f"pipe {pipe.name} is {state}")

    def _bind(self, statement: Query | Dml) -> str:
        """Spark SQL with catalog tables as Delta paths and special sources as temporary views."""
        relations = {
            name: self.catalog.relation(name) for name in referenced_tables(statement.expression)
        }
        narrowed = {
            name: [column.name for column in relation.columns]
            for name, relation in relations.items()
            if isinstance(relation, DynamicTableEntry) and relation.hidden
        }
        bound = bind_tables(statement.expression, lambda name: relations[name].location, narrowed)
        for placeholder, source in statement.sources.items():
            self._source_frame(source).createOrReplaceTempView(placeholder)
        return bound

    def _source_frame(self, source: Source) -> DataFrame:
        catalog, settings = self.catalog, self.settings
        if isinstance(source, LoadHistorySource):
            return load_history_frame(self.spark, catalog, settings, source.table)
        volume = catalog.get_object(VolumeEntry, source.volume)
        store = volumes.store_of(catalog, settings, volume)
        if isinstance(source, DirectorySource):
            return volumes.directory_frame(self.spark, volume, store)
        files = volumes.source_files(source, volume, store)
        return volumes.read_files(self.spark, source, store, files)


def _numbered(rows: Iterable[Row], number: int) -> Iterator[Row]:
    """Rows whose failures, found only while reading them, still name their statement."""
    try:
        yield from rows
    except StatementError:
        raise
    except LakeError as error:
        raise StatementError(number, error) from error
