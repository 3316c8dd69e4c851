"""The Python session API: `Session.builder.configs({...}).create()`,
`session.sql(…)`, `session.table(…)` and `frame.write.save_as_table(…)`, over a LakeSession.

Frames are PySpark DataFrames behind a thin proxy (`LakeFrame`) that remembers which stream
ranges their rows come from. Only `save_as_table` consumes those ranges, in the same Delta commit
as its rows, so a crash leaves both or neither; reading a frame (`show`, `collect`, `toPandas`)
never moves an offset."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructType

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import writer_options
from lake_assets.core.delta import latest_version, quote_name
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.core.spark_errors import translate_spark_error
from lake_assets.core.writes import commit_write
from lake_assets.frame_inputs import (
    check_setting,
    checked_save_mode,
    column_type,
    consumable,
    object_name,
    session_settings,
)
from lake_assets.frame_proxies import LakeFrame
from lake_assets.kinds import GRAMMAR
from lake_assets.lake_session import LakeSession
from lake_assets.output import write_result
from lake_assets.sql.grammar import OVERWRITE
from lake_assets.sql.statements import Query
from lake_assets.streams import offsets
from lake_assets.streams.reading import StreamRead
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.enforcing import judged
from lake_assets.tables.engine import create_table, drop_table
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.grammar import CreateTable, DropTable


class SessionBuilder:
    """`Session.builder`: settings first, then `create()`."""

    def __init__(self) -> None:
        self._options: dict[str, Any] = {}

    def configs(self, options: Mapping[str, Any]) -> SessionBuilder:
        """Several settings at once; `schema` must be 'public', and `vcluster` is accepted and
        ignored (Spark's master or Connect server says where work runs)."""
        for key, value in options.items():
            self.config(key, value)
        return self

    def config(self, key: str, value: Any) -> SessionBuilder:
        """One setting, refused at once when unknown so that a typo is not silently dropped."""
        check_setting(key, value)
        self._options[key] = value
        return self

    def create(self) -> Session:
        """A session on the project's Spark resource: a local JVM, or Spark Connect when
        spark_remote (or LAKE_SPARK_REMOTE) is set. Spark starts at the first statement that
        needs it."""
        from resources.spark import DeltaSparkResource  # Dagster loads only when one is built

        settings = session_settings(self._options)
        resource = DeltaSparkResource.from_settings(
            settings, console_log=str(settings.log_dir / "spark-console.log")
        )
        return Session(
            _lake(settings, lambda: resource.spark_session),
            close=resource.release,
        )


class _NewBuilder:
    """A fresh builder on every `Session.builder`, so that two sessions never share settings."""

    def __get__(self, instance: object, owner: type) -> SessionBuilder:
        return SessionBuilder()


def _lake(settings: LakeSettings, spark: Callable[[], SparkSession]) -> LakeSession:
    """A LakeSession that, like `lake sql`, reports its commits to Dagster when DAGSTER_HOME is
    set (so that the dynamic tables reading a written table refresh)."""
    from lake_assets.changes import dagster_reporter

    catalog = Catalog(settings.catalog_location)
    return LakeSession(catalog, settings, spark, changed=dagster_reporter(catalog))


class Session:
    """The Python API's session: SQL of our whole dialect, and tables and streams as DataFrames."""

    builder = _NewBuilder()

    def __init__(self, lake: LakeSession, close: Callable[[], None] | None = None) -> None:
        self.lake = lake
        self._close = close

    @classmethod
    def from_spark(cls, spark: SparkSession, lake_home: str | Path | None = None) -> Session:
        """A session on a Spark session someone else started, such as the `spark` resource of a
        Dagster asset (`DeltaSparkResource.spark_session`); LAKE_HOME when lake_home is None."""
        settings = session_settings({} if lake_home is None else {"lake_home": lake_home})
        return cls(_lake(settings, lambda: spark))

    @property
    def spark(self) -> SparkSession:
        """The Spark session underneath, started on first use."""
        return self.lake.spark

    def close(self) -> None:
        """Release a Spark Connect session on its server; a local JVM ends with its process."""
        if self._close is not None:
            self._close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sql(self, text: str) -> LakeFrame | SqlResult:
        """A lone SELECT is a lazy frame (streams pinned now); any other script runs now, each
        statement its own transaction."""
        statements = GRAMMAR.parse_script(text)
        if len(statements) == 1 and isinstance(query := statements[0], Query):
            return self._query(query)
        return SqlResult(self.lake.sql(text))

    def table(self, name: str) -> LakeFrame:
        """A table's or dynamic table's visible columns, or a stream's rows pinned now."""
        query = GRAMMAR.parse(f"SELECT * FROM {quote_name(object_name(name))}")
        assert isinstance(query, Query), "SELECT * is a query"
        return self._query(query)

    def create_dataframe(self, data: Any, schema: Any = None) -> LakeFrame:
        """PySpark's createDataFrame, as a frame that save_as_table can write."""
        return LakeFrame(self.spark.createDataFrame(data, schema), self)

    def _query(self, statement: Query) -> LakeFrame:
        with self._translating():
            bound = self.lake.bind(statement)
            reads = [read for read in bound.reads if isinstance(read, StreamRead)]
            return LakeFrame(self.spark.sql(bound.sql), self, reads)

    @contextmanager
    def _translating(self) -> Iterator[None]:
        """Spark's errors inside as LakeErrors that name our tables, not their paths."""
        try:
            yield
        except LakeError:
            raise
        except Exception as error:
            translated = translate_spark_error(error, self.lake.catalog.relation_locations())
            if translated is None:
                raise
            raise translated from error

    def save(self, frame: LakeFrame, name: str, mode: str) -> None:
        """Write `frame` into the catalog table `name` (created from the frame's schema when
        missing) as one commit that consumes the frame's stream reads."""
        name = object_name(name)
        mode = checked_save_mode(mode)
        exists = self._target_exists(name, mode)
        if exists and mode == "ignore":
            return
        with self._translating():
            if not exists:
                self._create(name, frame.dataframe.schema)
            try:
                self.lake.committing(name, lambda: self._write(frame, name, mode == "overwrite"))
            except BaseException:
                if not exists:
                    self._drop_if_unwritten(name)
                raise

    def _target_exists(self, name: str, mode: str) -> bool:
        """Whether the table is there already; anything else by that name is refused, saying
        why (a stream cannot be written, a dynamic table only by its refreshes)."""
        if self.lake.catalog.find_relation(name) is None:
            return False
        self.lake.catalog.get(TableEntry, name)
        if mode == "errorifexists":
            raise LakeError(
                f"table {name} already exists",
                "save with mode='append' or mode='overwrite', or pick another name",
            )
        return True

    def _create(self, name: str, schema: StructType) -> None:
        """The table, through CREATE TABLE's own code, with the frame's column types."""
        columns = tuple(
            Column(field.name, column_type(field.name, field.dataType)) for field in schema.fields
        )
        create_table(self.lake, CreateTable(name, columns))

    def _drop_if_unwritten(self, name: str) -> None:
        """A table this save created, dropped again when nothing was committed to it."""
        entry = self.lake.catalog.find(TableEntry, name)
        if entry is not None and latest_version(self.spark, entry.location) == 0:
            drop_table(self.lake, DropTable(name))

    def _write(self, frame: LakeFrame, name: str, overwrite: bool) -> Result:
        """One tagged commit inside `consuming`, as SQL DML commits."""
        spark, catalog = self.spark, self.lake.catalog
        reads = consumable(frame.stream_reads)

        target = recorded_schema(catalog, catalog.get(TableEntry, name))

        def write(location: str, record: dict[str, Any]) -> None:
            kept = judged(target, frame.dataframe, record["tag"], f"save_as_table into {name}")
            record.update(kept.record())
            writer = kept.rows.write.format("delta").mode("overwrite" if overwrite else "append")
            writer.options(**writer_options(record)).save(location)

        return commit_write(
            spark,
            catalog,
            target,
            OVERWRITE if overwrite else "INSERT",
            functools.partial(offsets.consuming, spark, catalog, reads),
            write,
        )


@dataclass(frozen=True)
class SqlResult:
    """A script that has run: `collect()` gives its last statement's rows, or one
    `Row(status=…)` for a statement that answers with a status line."""

    results: list[Result]

    def collect(self) -> list[Row]:
        """PySpark Rows, as the Python API's `.collect()` returns for every statement."""
        if not self.results:
            return []
        last = self.results[-1]
        if last.columns:
            shape = Row(*last.columns)
            return [shape(*values) for values in last.rows]
        return [] if last.message is None else [Row(status=last.message)]

    def show(self) -> None:
        """The last statement's result as `lake sql` prints it."""
        if self.results:
            write_result(self.results[-1], "table", sys.stdout)
