"""The Python session API: `Session.builder.configs({...}).create()`,
`session.sql(…)`, `session.table(…)` and `frame.write.save_as_table(…)`, over a LakeSession.

Frames are PySpark DataFrames behind a thin proxy (`LakeFrame`) that remembers which stream
ranges their rows come from. Only `save_as_table` consumes those ranges, in the same Delta commit
as its rows (DESIGN.md rule 1); reading a frame (`show`, `collect`, `toPandas`) never moves an
offset."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import DataType, StructType

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import writer_options
from lake_assets.core.delta import latest_version, quote_name
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.core.spark_errors import translate_spark_error
from lake_assets.kinds import GRAMMAR
from lake_assets.lake_session import LakeSession
from lake_assets.output import write_result
from lake_assets.sql.grammar import OVERWRITE
from lake_assets.sql.statements import Query
from lake_assets.sql.tokens import TokenCursor, tokenize
from lake_assets.sql.types import SUPPORTED, parse_column_type
from lake_assets.streams import offsets
from lake_assets.streams.reading import StreamRead
from lake_assets.tables.dml import commit_write
from lake_assets.tables.engine import create_table, drop_table
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.grammar import CreateTable, DropTable

# Settings of `Session.builder.configs`: ours, then the documented ones a one-schema lake takes.
SETTINGS = ("lake_home", "spark_master", "spark_remote", "spark_conf", "schema", "vcluster")
SCHEMA = "public"
SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")
_MODE_ALIASES = {"error": "errorifexists", "default": "errorifexists"}
# PySpark objects, besides DataFrames, whose methods return DataFrames (df.groupBy(…).agg(…)).
_HELPERS = frozenset(
    {"GroupedData", "PandasCogroupedOps", "DataFrameNaFunctions", "DataFrameStatFunctions"}
)


def _check_setting(key: str, value: Any) -> None:
    """Refuse a setting the builder does not know, or a schema other than the only one."""
    if key not in SETTINGS:
        raise LakeError(f"unknown session setting '{key}'", f"use only: {', '.join(SETTINGS)}")
    if key == "schema" and value is not None and str(value).lower() != SCHEMA:
        raise LakeError(
            f"schema '{value}' does not exist: every object lives in the one schema '{SCHEMA}'",
            f"leave schema out or set it to '{SCHEMA}'",
        )
    if key == "spark_conf" and value is not None and not isinstance(value, Mapping):
        raise LakeError(
            f"spark_conf must be a dict of Spark settings, not {type(value).__name__}",
            "pass e.g. {'spark.driver.memory': '4g'}",
        )


def session_settings(options: Mapping[str, Any]) -> LakeSettings:
    """The settings `lake sql` reads from the environment, with the builder's `options` winning
    (spark_conf entries are added to LAKE_SPARK_CONF's; spark_remote=None means a local JVM)."""
    for key, value in options.items():
        _check_setting(key, value)
    settings = LakeSettings.from_env()
    changes: dict[str, Any] = {}
    if options.get("lake_home") is not None:
        changes["lake_home"] = Path(options["lake_home"])
    if options.get("spark_master") is not None:
        changes["spark_master"] = str(options["spark_master"])
    if "spark_remote" in options:
        changes["spark_remote"] = options["spark_remote"] or None
    if options.get("spark_conf"):
        conf = {str(key): str(value) for key, value in options["spark_conf"].items()}
        changes["spark_conf"] = {**settings.spark_conf, **conf}
    return replace(settings, **changes)


class SessionBuilder:
    """`Session.builder`: settings first, then `create()`, as documented."""

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
        _check_setting(key, value)
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
        query = GRAMMAR.parse(f"SELECT * FROM {quote_name(_object_name(name))}")
        assert isinstance(query, Query), "SELECT * is a query"
        return self._query(query)

    def create_dataframe(self, data: Any, schema: Any = None) -> LakeFrame:
        """PySpark's createDataFrame, as a frame that save_as_table can write."""
        return LakeFrame(self.spark.createDataFrame(data, schema), self)

    def _query(self, statement: Query) -> LakeFrame:
        with self._translating():
            bound = self.lake.bind(statement)
            return LakeFrame(self.spark.sql(bound.sql), self, bound.reads)

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
        name = _object_name(name)
        mode = _save_mode(mode)
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
            Column(field.name, _column_type(field.name, field.dataType)) for field in schema.fields
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
        reads = _consumable(frame.stream_reads)

        def write(location: str, record: dict[str, Any]) -> None:
            writer = frame.dataframe.write.format("delta").mode(
                "overwrite" if overwrite else "append"
            )
            writer.options(**writer_options(record)).save(location)

        return commit_write(
            spark,
            catalog,
            name,
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


class _Carrier:
    """A PySpark object behind a proxy: every attribute forwarded, and every DataFrame its
    methods return wrapped again, with the stream reads of this object and of its arguments."""

    __slots__ = ("_reads", "_session", "_target")

    def __init__(self, target: Any, session: Session, reads: Iterable[StreamRead] = ()) -> None:
        self._target = target
        self._session = session
        self._reads = tuple(dict.fromkeys(reads))

    def __getattr__(self, name: str) -> Any:
        if name in _Carrier.__slots__:  # not set yet (copy, pickle): no forwarding loop
            raise AttributeError(name)
        return _carried(getattr(self._target, name), self._session, self._reads)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._target)) | set(super().__dir__()))

    def __repr__(self) -> str:
        return repr(self._target)


class LakeFrame(_Carrier):
    """A PySpark DataFrame with PySpark's whole API, that knows the stream ranges it reads."""

    __slots__ = ()

    @property
    def dataframe(self) -> DataFrame:
        """The PySpark DataFrame itself (for APIs that check its type)."""
        return self._target

    @property
    def stream_reads(self) -> tuple[StreamRead, ...]:
        """The pinned stream ranges this frame's rows come from, each once."""
        return self._reads

    @property
    def write(self) -> LakeWriter:
        return LakeWriter(self)

    def __getitem__(self, item: Any) -> Any:
        return _forwarding(self._target.__getitem__, self._session, self._reads)(item)


class LakeWriter:
    """`frame.write`: `save_as_table` (and `saveAsTable`) write a catalog table and consume the
    frame's streams; every other method is PySpark's DataFrameWriter's."""

    __slots__ = ("_frame", "_mode", "_writer")

    def __init__(self, frame: LakeFrame) -> None:
        self._frame = frame
        self._writer = frame.dataframe.write
        self._mode = "errorifexists"

    def mode(self, save_mode: str | None) -> LakeWriter:
        """The mode of the save that follows, as in PySpark (checked here, with our message)."""
        self._mode = _save_mode(save_mode or "errorifexists")
        self._writer.mode(self._mode)
        return self

    def save_as_table(self, table_name: str, mode: str | None = None) -> None:
        """Append to, overwrite, or create the catalog table (errorifexists, PySpark's default,
        when no mode is given); PySpark writer options do not apply to it."""
        self._frame._session.save(self._frame, table_name, mode or self._mode)

    saveAsTable = save_as_table  # PySpark's spelling

    def __getattr__(self, name: str) -> Any:
        if name in LakeWriter.__slots__:
            raise AttributeError(name)
        value = getattr(self._writer, name)
        if not inspect.ismethod(value):
            return value

        @functools.wraps(value)
        def chained(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return self if result is self._writer else result

        return chained


def _carried(value: Any, session: Session, reads: tuple[StreamRead, ...]) -> Any:
    """`value` wrapped when it is or can make a DataFrame; anything else as it is."""
    if isinstance(value, DataFrame):
        return LakeFrame(value, session, reads)
    if isinstance(value, list) and value and all(isinstance(v, DataFrame) for v in value):
        return [LakeFrame(v, session, reads) for v in value]  # randomSplit
    kind = type(value)
    if kind.__name__ in _HELPERS and kind.__module__.startswith("pyspark."):
        return _Carrier(value, session, reads)
    if inspect.ismethod(value):
        return _forwarding(value, session, reads)
    return value


def _forwarding(
    method: Callable[..., Any], session: Session, reads: tuple[StreamRead, ...]
) -> Callable[..., Any]:
    """`method` taking proxies as arguments (joins, unions), its result carrying their reads."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        found = list(reads)
        plain_args = [_plain(arg, found) for arg in args]
        plain_kwargs = {key: _plain(value, found) for key, value in kwargs.items()}
        return _carried(method(*plain_args, **plain_kwargs), session, tuple(found))

    return call


def _plain(value: Any, reads: list[StreamRead]) -> Any:
    """The PySpark object behind a proxy (or in a list of them), its reads added to `reads`."""
    if isinstance(value, _Carrier):
        reads.extend(value._reads)
        return value._target
    if isinstance(value, list | tuple):
        return type(value)(_plain(item, reads) for item in value)
    return value


def _consumable(reads: Iterable[StreamRead]) -> tuple[StreamRead, ...]:
    """One range per stream: a frame that read a stream twice, at different versions, cannot
    say where the offset should move to."""
    by_stream: dict[str, StreamRead] = {}
    for read in reads:
        first = by_stream.setdefault(read.stream, read)
        if first != read:
            raise LakeError(
                f"this frame reads stream {read.stream} twice, up to versions {first.end} and "
                f"{read.end}",
                f"read it once with session.table('{read.stream}') and use that frame throughout",
            )
    return tuple(by_stream.values())


def _object_name(name: str) -> str:
    """A catalog name as SQL spells it: case-insensitive, and bare (one schema)."""
    cursor = TokenCursor(tokenize(name), usage="a bare name, such as orders")
    found = cursor.name("a table name")
    cursor.expect_end()
    return found


def _save_mode(mode: str) -> str:
    found = _MODE_ALIASES.get(mode.lower(), mode.lower())
    if found not in SAVE_MODES:
        raise LakeError(f"unknown save mode '{mode}'", f"use one of: {', '.join(SAVE_MODES)}")
    return found


def _column_type(name: str, data_type: DataType) -> str:
    """A frame column's type as CREATE TABLE spells it, through CREATE TABLE's type parser."""
    text = data_type.simpleString()
    cursor = TokenCursor(tokenize(text))
    try:
        spelled: str | None = parse_column_type(cursor, name)
    except LakeError:
        spelled = None
    if spelled is None or not cursor.at_end():
        raise LakeError(
            f"column {name} has the type {text}, which a table cannot hold",
            f"cast it to one of {SUPPORTED}",
        )
    return spelled
