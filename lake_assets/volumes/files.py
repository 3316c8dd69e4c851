"""A volume's files: its store, its directory table, reading files as rows, exporting rows."""

from __future__ import annotations

import hashlib
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import committing, new_record, newest, writer_options
from lake_assets.core.delta import delta_ref, fetch_folder, quote_name, remove_location
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.names import hidden
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.grammar import CopyIntoVolume, VolumeSource
from lake_assets.volumes.stores import open_store
from resources.storage import FileInfo, VolumeStore, inside

# The first key of a directory table's refresh commit record.
DIRECTORY_MARKER = "lake_directory"

DIRECTORY_SCHEMA = StructType(
    [
        StructField("relative_path", StringType(), False),
        StructField("size", LongType(), False),
        StructField("last_modified_time", TimestampType(), False),
        StructField("url", StringType(), False),
        StructField("etag", StringType(), False),
    ]
)
_LISTING = hidden("listing")
_EXTENSIONS = {"CSV": "csv", "PARQUET": "parquet", "JSON": "json"}
# Hadoop's glob characters, escaped with a backslash so that a path matches only itself.
_GLOB_CHARACTERS = re.compile(r"([\\{}\[\]*?])")
# Spark's reader option that takes paths literally (internal, honoured by its file sources).
_GLOB_PATHS = "__globPaths__"
# Local files are read without Hadoop's checksum layer: it opens a '.<name>.crc' beside each file,
# a path it cannot build for a name holding ':' (volume files have no checksum files); uncached,
# since the cached filesystem of the scheme would ignore the choice.
_PLAIN_LOCAL_FILES = {
    "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}
# Format options unless a statement's OPTIONS or FILE_FORMAT set them, keyed in lower case as
# those are (Spark takes a key in any case, and of two spellings the last one given). CSV is
# RFC 4180: a quote inside a quoted field is doubled, where Spark would escape it with a
# backslash; its writer would also trim each value's leading and trailing white space.
_RFC_4180 = {"escape": '"'}
_READING_DEFAULTS = {"CSV": _RFC_4180, "JSON": {"multiline": "false"}}
_WRITING_DEFAULTS = {
    "CSV": {**_RFC_4180, "ignoreleadingwhitespace": "false", "ignoretrailingwhitespace": "false"}
}


def store_of(catalog: Catalog, settings: LakeSettings, volume: VolumeEntry) -> VolumeStore:
    """The volume's store, as this process's Spark reads it: a cluster's executors read objects
    in place."""
    connection = catalog.get(ConnectionEntry, volume.connection)
    return open_store(volume, connection, settings.lake_home, in_place=not settings.local_spark)


def create_directory_table(spark: SparkSession, location: str) -> None:
    """An empty directory table with change data feed, for volume streams to read; it records
    the empty listing's digest, as each refresh records its listing's."""
    record = new_record(DIRECTORY_MARKER, digest=listing_digest([]), files=0)
    (
        spark.createDataFrame([], DIRECTORY_SCHEMA)
        .write.format("delta")
        .option("delta.enableChangeDataFeed", "true")
        .options(**writer_options(record))
        .save(location)
    )


def listing_digest(files: list[FileInfo]) -> str:
    """Changes whenever a file appears, disappears or changes."""
    digest = hashlib.sha256()
    for info in files:
        digest.update(f"{info.relative_path}\\0{info.etag}\\0{info.size}\\n".encode())
    return digest.hexdigest()[:16]


def directory_digest(spark: SparkSession | None, volume: VolumeEntry) -> str | None:
    """The listing digest the directory table was last refreshed to, from its Delta log (no
    Spark for a local one); None before the first refresh."""
    found = newest(spark, volume.directory_location, DIRECTORY_MARKER)
    return None if found is None else found[1]["digest"]


def refresh_directory(spark: SparkSession, volume: VolumeEntry, store: VolumeStore) -> str:
    """Bring the directory table in line with a fresh listing, as one MERGE whose commit records
    the listing's digest; an unchanged listing commits nothing."""
    files = store.list(recursive=volume.recursive)
    digest = listing_digest(files)
    if directory_digest(spark, volume) == digest:
        return f"volume {volume.name} is up to date: {len(files)} files"
    listing = spark.createDataFrame(
        [
            (f.relative_path, f.size, f.last_modified.replace(tzinfo=None), f.url, f.etag)
            for f in files
        ],
        DIRECTORY_SCHEMA,
    )
    listing.createOrReplaceTempView(_LISTING)
    with committing(spark, new_record(DIRECTORY_MARKER, digest=digest, files=len(files))):
        spark.sql(
            f"""MERGE INTO {delta_ref(volume.directory_location)} d
            USING {_LISTING} l ON d.relative_path = l.relative_path
            WHEN MATCHED AND (d.etag <> l.etag OR d.size <> l.size) THEN UPDATE SET *
            WHEN NOT MATCHED THEN INSERT *
            WHEN NOT MATCHED BY SOURCE THEN DELETE"""
        ).collect()
    return f"refreshed volume {volume.name}: {len(files)} files"


def directory_frame(spark: SparkSession, volume: VolumeEntry, store: VolumeStore) -> DataFrame:
    """DIRECTORY(VOLUME v); volumes with AUTO_REFRESH are refreshed first."""
    if not volume.directory_enabled:
        raise LakeError(
            f"volume {volume.name} has no directory table",
            "create it with DIRECTORY = (ENABLE = TRUE)",
        )
    if volume.auto_refresh:
        refresh_directory(spark, volume, store)
    return spark.read.format("delta").load(volume.directory_location)


def source_files(source: VolumeSource, volume: VolumeEntry, store: VolumeStore) -> list[FileInfo]:
    """The files a VOLUME source names: FILES(…) (relative to SUBDIRECTORY, if any) or all."""
    folder = inside(source.subdirectory or "", "SUBDIRECTORY")
    listed = store.list(folder, recursive=volume.recursive or source.files is not None)
    if source.files is None:
        return listed
    by_path = {info.relative_path: info for info in listed}
    wanted = []
    for name in source.files:
        path = inside(_joined(folder, name), "FILES entry")
        if path not in by_path:
            raise LakeError(
                f"file {name} is not in volume {volume.name}",
                f"list the files with SELECT * FROM DIRECTORY(VOLUME {volume.name})",
            )
        wanted.append(by_path[path])
    return wanted


def in_scope(source: VolumeSource, volume: VolumeEntry, relative: str) -> bool:
    """Whether the COPY's source takes this volume path: the paths source_files would list."""
    folder = inside(source.subdirectory or "", "SUBDIRECTORY")
    if source.files is not None:
        return relative in {inside(_joined(folder, name), "FILES entry") for name in source.files}
    if folder and not relative.startswith(f"{folder}/"):
        return False
    rest = relative[len(folder) + 1 :] if folder else relative
    return volume.recursive or "/" not in rest


def named_files(
    source: VolumeSource, volume: VolumeEntry, store: VolumeStore, paths: list[str]
) -> list[FileInfo]:
    """The named volume paths that the COPY takes and that exist now (events can be stale)."""
    found = []
    for relative in sorted(set(paths)):
        if in_scope(source, volume, inside(relative)) and (info := store.stat(relative)):
            found.append(info)
    return found


def format_options(
    file_format: str, options: dict[str, str], *, writing: bool = False
) -> dict[str, str]:
    """The options files of a format are read (or written) with: the statement's over the
    project's defaults."""
    defaults = (_WRITING_DEFAULTS if writing else _READING_DEFAULTS).get(file_format, {})
    return {**defaults, **options}


def file_reader(spark: SparkSession, source: VolumeSource, store: VolumeStore) -> DataFrameReader:
    """A reader of the COPY's or SELECT's files: their format options, and what Spark needs to
    reach them; it reads them with `load_files`."""
    options = {**store.spark_options(), **format_options(source.file_format, source.options)}
    return spark.read.format(source.file_format.lower()).options(**options, **_PLAIN_LOCAL_FILES)


def load_files(reader: DataFrameReader, paths: list[str]) -> DataFrame:
    """The rows of exactly these files, each once: every reader of volume files reads through
    here. Spark takes each path as a Hadoop glob, so a file named x*.csv would also read x1.csv;
    each path is escaped into a glob matching only itself. Hadoop's glob cannot hold a ':' in a
    name beside a glob character (a:b[1].csv), so one path is read with Spark's switch that turns
    globbing off, which for several paths repeats them (it returns every path for each
    glob-like one): a COPY reads such a file alone when the batch fails on it."""
    if len(paths) == 1:
        return reader.option(_GLOB_PATHS, "false").load(paths[0])
    return reader.load([_GLOB_CHARACTERS.sub(r"\\\1", path) for path in paths])


def read_files(
    spark: SparkSession, source: VolumeSource, store: VolumeStore, files: list[FileInfo]
) -> DataFrame:
    """SELECT … FROM VOLUME v …: CSV without header or column list names columns f0, f1, …"""
    paths = [store.spark_path(info.relative_path) for info in files]
    reader = file_reader(spark, source, store)
    if source.columns:
        reader = reader.schema(column_ddl(source.columns))
    if not paths:
        return spark.createDataFrame([], column_ddl(source.columns) or StructType([]))
    frame = load_files(reader, paths)
    if source.file_format == "CSV" and not source.columns and not source.has_header:
        frame = frame.toDF(*[f"f{i}" for i in range(len(frame.columns))])
    return frame


def column_ddl(columns: tuple[Column, ...] | None) -> str:
    return ", ".join(f"{quote_name(c.name)} {c.type}" for c in columns or ())


def export_path(stmt: CopyIntoVolume, tag: str) -> str:
    """The one file a COPY that consumes streams writes: named from its tag, so that a later
    process finds it, and with it whether the COPY landed."""
    folder = inside(stmt.subdirectory, "SUBDIRECTORY")
    return _joined(folder, f"part-{tag}.{_EXTENSIONS[stmt.file_format]}")


def copy_into_volume(
    volume: VolumeEntry,
    store: VolumeStore,
    frame: DataFrame,
    stmt: CopyIntoVolume,
    settings: LakeSettings,
    exported: str | None = None,
) -> Result:
    """Write the rows under SUBDIRECTORY as one file per Spark partition named partNNNNN.<ext>,
    or, for a COPY that consumes streams, as the one file `exported`."""
    extension = _EXTENSIONS[stmt.file_format]
    with staged(frame, stmt.file_format, stmt.options, settings) as parts:
        if exported is None:
            written = _numbered(store, inside(stmt.subdirectory, "SUBDIRECTORY"), extension, parts)
        else:
            put_single(volume, store, exported, parts, "a COPY that consumes streams")
            written = [exported]
    return Result.status(f"exported to volume {volume.name}: {', '.join(written) or 'no files'}")


@contextmanager
def _fresh_folder(root: Path) -> Iterator[Path]:
    """A new local folder for one file's staging, gone afterwards."""
    folder = root / f"export-{uuid.uuid4().hex}"
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def staged(
    frame: DataFrame, file_format: str, options: dict[str, str], settings: LakeSettings
) -> Iterator[list[Path]]:
    """The rows written by one Spark task into a fresh folder, whose files are then put into a
    volume whole (never written there in pieces); the folder goes afterwards. A local master's
    task writes it under LAKE_HOME; a cluster's executor under the warehouse, which every node
    reaches, and the driver fetches the files from there."""
    with _fresh_folder(settings.lake_home / "tmp") as local:
        shared = (
            None if settings.local_spark else f"{settings.warehouse_location}/_staging/{local.name}"
        )
        try:
            writer = (
                frame.repartition(1)
                .write.format(file_format.lower())
                .options(**format_options(file_format, options, writing=True))
            )
            writer.save(shared or str(local))
            if shared is not None:
                fetch_folder(shared, local)
            yield sorted(local.glob(f"part-*.{_EXTENSIONS[file_format]}*"))
        finally:
            if shared is not None:
                remove_location(shared)


@contextmanager
def staged_parquet(rows: pa.Table, staging_root: Path) -> Iterator[list[Path]]:
    """Rows already in this process as one Parquet file, staged as `staged` stages Spark's."""
    with _fresh_folder(staging_root) as staging:
        staging.mkdir(parents=True)
        part = staging / "part-00000.parquet"
        pq.write_table(rows, part)
        yield [part]


def file_name(name: str, file_format: str) -> str:
    """`name` with the extension of `file_format`."""
    return f"{name}.{_EXTENSIONS[file_format]}"


def _numbered(store: VolumeStore, folder: str, extension: str, parts: list[Path]) -> list[str]:
    """Put each part as the next free partNNNNN.<ext> in `folder`: an export never overwrites."""
    taken = {info.relative_path for info in store.list(folder, recursive=False)}
    number = 1
    written = []
    for part in parts:
        while (name := _joined(folder, f"part{number:05d}.{extension}")) in taken:
            number += 1
        store.put(part, name)
        taken.add(name)
        written.append(name)
    return written


def put_single(
    volume: VolumeEntry, store: VolumeStore, name: str, parts: list[Path], writer: str
) -> None:
    """Put the one part (Spark writes one even for no rows) as `name` in one atomic put, so the
    file is there whole or not at all, and replaces one of that name the same way."""
    if len(parts) != 1:
        raise LakeError(
            f"{writer} would write {len(parts)} files to volume {volume.name}, but it writes one",
            "leave out the FILE_FORMAT option that splits the output (maxRecordsPerFile)",
        )
    store.put(parts[0], name)


def export_landed(catalog: Catalog, name: str, path: str, lake_home: str) -> bool:
    """Whether a consuming COPY's file `path` is in volume `name` (see streams.offsets): the
    volume opened as the writer did, with its LAKE_HOME's key to the connection's secrets."""
    volume = catalog.find(VolumeEntry, name)
    if volume is None:  # the volume is gone: nothing of it can be kept consistent any more
        return False
    connection = catalog.get(ConnectionEntry, volume.connection)
    return open_store(volume, connection, Path(lake_home)).stat(path) is not None


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name
