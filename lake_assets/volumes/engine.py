"""External volumes: CREATE, REFRESH, COPY INTO VOLUME, SHOW / DESC, and the relations
`VOLUME v …` and `DIRECTORY(VOLUME v)` read in queries."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from pyspark.sql import DataFrame

from lake_assets.core.delta import remove_location
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import name_taken
from lake_assets.core.results import Result
from lake_assets.sql.statements import DescribeObject
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes import files
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.grammar import (
    CopyIntoVolume,
    CreateVolume,
    DirectorySource,
    RefreshVolume,
    VolumeSource,
)
from resources.storage import VolumeStore, split_location

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# S3's codes for credentials it does not accept (answered with 403).
_DENIED = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"})


def _opened(session: Context, name: str) -> tuple[VolumeEntry, VolumeStore]:
    """The volume called `name` and its store, or an error naming the volume."""
    volume = session.catalog.get(VolumeEntry, name)
    return volume, files.store_of(session.catalog, session.settings, volume)


def create_volume(session: Context, stmt: CreateVolume) -> Result:
    catalog, settings = session.catalog, session.settings
    if taken := name_taken(session, VolumeEntry, stmt.name, stmt.if_not_exists):
        return taken
    split_location(stmt.location)
    directory = session.warehouse_path("_directories", f"{stmt.name}-{uuid.uuid4().hex[:12]}")
    entry = VolumeEntry(
        name=stmt.name,
        created_at=now_utc(),
        location=stmt.location,
        connection=stmt.connection,
        directory_enabled=stmt.directory_enabled,
        auto_refresh=stmt.auto_refresh,
        recursive=stmt.recursive,
        comment=stmt.comment,
        directory_location=directory,
        queue_type=stmt.queue_type,
        queue_name=stmt.queue_name,
    )
    store = files.store_of(catalog, settings, entry)
    # Listed before it is registered: a bucket that is missing or refuses leaves nothing behind.
    try:
        files.create_directory_table(session.spark, directory)
        with storage_errors(entry):
            files.refresh_directory(session.spark, entry, store)
        catalog.add(entry)
    except BaseException:
        remove_location(directory)
        raise
    return Result.status(f"created volume {stmt.name}")


@contextmanager
def storage_errors(volume: VolumeEntry) -> Iterator[None]:
    """What object storage answers a volume's listing or reads, as one line that names the
    bucket and the fix (never the credentials)."""
    try:
        yield
    except ClientError as error:
        raise _refused(volume, error) from None
    except NoCredentialsError:
        raise LakeError(
            f"connection {volume.connection} of volume {volume.name} has no credentials",
            "use a connection that has its keys: CREATE STORAGE CONNECTION … ACCESS_ID = '…' "
            "ACCESS_KEY = '…'",
        ) from None
    except BotoCoreError as error:
        raise LakeError(
            f"cannot reach the object storage of volume {volume.name} (connection "
            f"{volume.connection}): {error}",
            f"check the ENDPOINT of connection {volume.connection} and that the server is up",
        ) from None


def _refused(volume: VolumeEntry, error: ClientError) -> LakeError:
    """A bucket's refusal: it is missing, it refuses the connection's credentials, or else."""
    _, bucket, _ = split_location(volume.location)
    answer = error.response.get("Error", {})
    code = answer.get("Code") or "?"
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "NoSuchBucket":
        return LakeError(
            f"bucket {bucket} of volume {volume.name} does not exist",
            f"create bucket {bucket}, or give the volume a LOCATION in an existing bucket",
        )
    if status == 403 or code in _DENIED:
        return LakeError(
            f"bucket {bucket} of volume {volume.name} refuses connection "
            f"{volume.connection} ({code})",
            f"check the ACCESS_ID and ACCESS_KEY of connection {volume.connection}, and that "
            f"the bucket's policy lets them list and read {volume.location}",
        )
    return LakeError(
        f"bucket {bucket} of volume {volume.name} answered {code}: {answer.get('Message')}",
        f"check connection {volume.connection} (ENDPOINT, REGION) and the bucket",
    )


def refresh_volume(session: Context, stmt: RefreshVolume) -> Result:
    volume, store = _opened(session, stmt.name)
    with storage_errors(volume):
        return Result.status(files.refresh_directory(session.spark, volume, store))


def copy_into_volume(session: Context, stmt: CopyIntoVolume) -> Result:
    """Export a table or a query's rows; a query that reads streams consumes them (one file,
    named from the statement's tag, moves them) as INSERT … SELECT does."""
    volume, store = _opened(session, stmt.volume)
    staging = session.settings
    if stmt.table is not None:
        location = session.catalog.get(TableEntry, stmt.table).location
        frame = session.spark.read.format("delta").load(location)
        return files.copy_into_volume(volume, store, frame, stmt, staging)
    assert stmt.query is not None
    bound = session.bind(stmt.query)
    frame = session.spark.sql(bound.sql)
    if not bound.reads:
        return files.copy_into_volume(volume, store, frame, stmt, staging)
    tag = uuid.uuid4().hex
    path = files.export_path(stmt, tag)
    with bound.exporting(volume.name, path, tag):
        return files.copy_into_volume(volume, store, frame, stmt, staging, path)


def read_volume(session: Context, source: VolumeSource) -> DataFrame:
    volume, store = _opened(session, source.volume)
    with storage_errors(volume):
        listed = files.source_files(source, volume, store)
        return files.read_files(session.spark, source, store, listed)


def read_directory(session: Context, source: DirectorySource) -> DataFrame:
    volume, store = _opened(session, source.volume)
    with storage_errors(volume):
        return files.directory_frame(session.spark, volume, store)


def show_volumes(session: Context) -> Result:
    return Result(
        ["name", "location", "connection", "auto_refresh", "comment", "created_at"],
        [
            (v.name, v.location, v.connection, v.auto_refresh, v.comment, v.created_at)
            for v in session.catalog.entries(VolumeEntry)
        ],
    )


def describe_volume(session: Context, stmt: DescribeObject) -> Result:
    volume, store = _opened(session, stmt.name)
    with storage_errors(volume):
        listing = store.list(recursive=volume.recursive)
    users = session.catalog.users_of(VolumeEntry, volume.name)
    return Result.properties(
        name=volume.name,
        location=volume.location,
        connection=volume.connection,
        directory_enabled=volume.directory_enabled,
        auto_refresh=volume.auto_refresh,
        recursive=volume.recursive,
        notification=f"{volume.queue_type}:{volume.queue_name}" if volume.queue_name else None,
        files=len(listing),
        bytes=sum(info.size for info in listing),
        pipes=", ".join(u.removeprefix("pipe ") for u in users if u.startswith("pipe ")) or None,
        comment=volume.comment,
        created_at=volume.created_at,
    )


def remove_directory_table(volume: VolumeEntry) -> None:
    if volume.directory_location:
        remove_location(volume.directory_location)
