"""A lakehouse session: runs the seed dialect's statements against the catalog and Spark."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pyspark.sql import Row, SparkSession

from lake_assets.engine import tables
from lake_assets.engine.dml import run_dml
from lake_assets.engine.results import Result
from lake_assets.engine.spark_errors import translate_spark_error
from lake_assets.sql.binding import bind_tables, referenced_tables
from lake_assets.sql.parser import StatementError, parse_script
from lake_assets.sql.statements import (
    AlterTableProperties,
    CreateTable,
    DescribeHistory,
    DescribeTable,
    Dml,
    DropTable,
    Query,
    ShowTables,
    Statement,
)
from resources.catalog import Catalog
from resources.errors import LakeError


class LakeSession:
    """Statements that only read the catalog (SHOW, DESC) never start Spark."""

    def __init__(
        self, catalog: Catalog, warehouse: Path, spark: Callable[[], SparkSession]
    ) -> None:
        self.catalog = catalog
        self.warehouse = warehouse
        self._spark = spark

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
        locations = tables.table_locations(self.catalog.tables())
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
            case CreateTable():
                return tables.create_table(self.spark, self.catalog, self.warehouse, statement)
            case DropTable():
                return tables.drop_table(self.catalog, statement)
            case AlterTableProperties():
                return tables.alter_properties(self.spark, self.catalog, statement)
            case DescribeTable():
                return tables.describe_table(self.catalog, statement)
            case DescribeHistory():
                return tables.describe_history(self.spark, self.catalog, statement)
            case ShowTables():
                return tables.show_tables(self.catalog)
            case Dml():
                bound = self._bind(statement)  # before Spark: unknown names fail without a JVM
                return run_dml(self.spark, self.catalog, statement, bound)
            case Query():
                bound = self._bind(statement)
                frame = self.spark.sql(bound)
                return Result(frame.columns, self._stream(frame.toLocalIterator()))
        raise AssertionError(f"no handler for {statement!r}")

    def _bind(self, statement: Query | Dml) -> str:
        locations = {
            name: self.catalog.table(name).location
            for name in referenced_tables(statement.expression)
        }
        return bind_tables(statement.expression, locations.__getitem__)


def _numbered(rows: Iterable[Row], number: int) -> Iterator[Row]:
    """Rows whose failures, found only while reading them, still name their statement."""
    try:
        yield from rows
    except StatementError:
        raise
    except LakeError as error:
        raise StatementError(number, error) from error
