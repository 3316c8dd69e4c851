"""A volume's store and event queue, opened from its catalog entry and its connection's: local
files, or S3 and SQS through the clients in resources, which take plain values."""

from __future__ import annotations

import os
from pathlib import Path

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import local_roots
from lake_assets.volumes.entry import VolumeEntry
from resources.queues import EventQueue
from resources.storage import LocalStore, VolumeStore, local_root, split_location
from resources.volumes import StorageAccess, s3_store, sqs_client


def storage_access(connection: ConnectionEntry) -> StorageAccess:
    """What the clients need of a connection: its endpoint, region and sealed keys."""
    return StorageAccess(
        connection.name,
        connection.endpoint,
        connection.region,
        connection.access_id,
        connection.access_key,
    )


def open_queue(volume: VolumeEntry, connection: ConnectionEntry, lake_home: Path) -> EventQueue:
    """The SQS queue a volume's NOTIFICATION clause names (CREATE PIPE checked that it has one)."""
    if volume.queue_name is None:
        raise LakeError(
            f"volume {volume.name} has no NOTIFICATION queue",
            "DROP VOLUME and CREATE it again with NOTIFICATION = "
            "(QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '…')",
        )
    client = sqs_client(storage_access(connection), lake_home)
    return EventQueue(client, volume.queue_name, volume.name)


def open_store(
    volume: VolumeEntry, connection: ConnectionEntry, lake_home: Path, *, in_place: bool = False
) -> VolumeStore:
    """The volume's files, copies of a bucket's kept under the LAKE_HOME; `in_place`: Spark
    reads objects in a bucket through S3A (see resources.volumes.s3_store)."""
    scheme, _, _ = split_location(volume.location)
    if scheme == "file":
        if connection.type != "LOCAL":
            raise LakeError(
                f"volume {volume.name} is a file:// location but connection {connection.name} "
                f"is {connection.type}",
                "use a LOCAL connection for file:// locations",
            )
        return LocalStore(local_root(volume.location, local_roots(os.environ, lake_home)))
    if connection.type == "LOCAL":
        raise LakeError(
            f"volume {volume.name} is in object storage but connection {connection.name} is LOCAL",
            "use an S3, OSS or COS connection for bucket locations",
        )
    cache = lake_home / "cache" / "volumes" / volume.name
    access = storage_access(connection)
    return s3_store(access, volume.location, cache, lake_home, in_place=in_place)
