"""Open a volume's store and event queue from its catalog entry: local files, or S3 and SQS."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import endpoints, local_roots
from lake_assets.volumes.entry import VolumeEntry
from resources.queues import EventQueue
from resources.s3a import bucket_settings
from resources.secrets import unseal
from resources.storage import LocalStore, S3Store, VolumeStore, local_root, split_location


def endpoint_url(name: str, endpoint: str | None) -> str | None:
    """The connection's ENDPOINT as a URL (https unless it says), once it names a host that
    LAKE_ENDPOINTS allows when set: credentials go only where the operator said they may, and
    never inside the URL, where they would be stored and shown."""
    if not endpoint:
        return None
    url = endpoint if "://" in endpoint else f"https://{endpoint}"
    parsed = urlparse(url)
    if "@" in parsed.netloc:
        raise LakeError(
            f"storage connection {name}: ENDPOINT holds credentials (user info before '@'), "
            "which would be kept and shown as plain text",
            "write ENDPOINT as scheme://host[:port] and give the keys as ACCESS_ID and ACCESS_KEY",
        )
    allowed = endpoints(os.environ)
    if allowed is None:
        return url
    host = (parsed.hostname or "").lower()
    try:
        hosts = {host, f"{host}:{parsed.port}"} if parsed.port else {host}
    except ValueError:  # a port that is no number
        hosts = set()
    if not hosts & set(allowed):
        raise LakeError(
            f"storage connection {name}: ENDPOINT '{endpoint}' is not one LAKE_ENDPOINTS allows",
            f"use one of {', '.join(allowed)}, or have the operator add it to LAKE_ENDPOINTS",
        )
    return url


def _client_settings(connection: ConnectionEntry, lake_home: Path) -> dict[str, Any]:
    """Endpoint, region and credentials shared by the S3 and SQS clients of one connection."""
    endpoint = endpoint_url(connection.name, connection.endpoint)
    return {
        "endpoint_url": endpoint,
        "region_name": connection.region or "us-east-1",
        "aws_access_key_id": unseal(connection.access_id, lake_home),
        "aws_secret_access_key": unseal(connection.access_key, lake_home),
    }


def s3_client(connection: ConnectionEntry, lake_home: Path) -> object:
    """A boto3 S3 client through dagster-aws' S3Resource; secrets are unsealed only here."""
    from dagster_aws.s3 import S3Resource  # imported on use: it costs ~1 s at definitions load

    return S3Resource(**_client_settings(connection, lake_home)).get_client()


def sqs_client(connection: ConnectionEntry, lake_home: Path) -> object:
    """A boto3 SQS client on the same endpoint, region and credentials as the S3 client."""
    import boto3  # imported on use, as dagster-aws is for S3

    return boto3.session.Session().client("sqs", **_client_settings(connection, lake_home))


def open_queue(volume: VolumeEntry, connection: ConnectionEntry, lake_home: Path) -> EventQueue:
    """The SQS queue a volume's NOTIFICATION clause names (CREATE PIPE checked that it has one)."""
    if volume.queue_name is None:
        raise LakeError(
            f"volume {volume.name} has no NOTIFICATION queue",
            "DROP VOLUME and CREATE it again with NOTIFICATION = "
            "(QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '…')",
        )
    return EventQueue(sqs_client(connection, lake_home), volume.queue_name, volume.name)


def open_store(
    volume: VolumeEntry, connection: ConnectionEntry, lake_home: Path, *, in_place: bool = False
) -> VolumeStore:
    """The volume's files; `in_place`: Spark reads objects in a bucket through S3A, where a
    cluster's executors reach them, rather than through this machine's copies."""
    scheme, bucket, path = split_location(volume.location)
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
    client = _client_settings(connection, lake_home)
    s3a = None
    if in_place:
        keys = client["aws_access_key_id"], client["aws_secret_access_key"]
        s3a = bucket_settings(bucket, client["endpoint_url"], client["region_name"], *keys)
    return S3Store(s3_client(connection, lake_home), bucket, path, cache, s3a)
