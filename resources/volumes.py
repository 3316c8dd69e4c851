"""Clients of a storage connection's object storage and event queues (S3 and SQS), built from
plain values: the kinds' packages pass a connection's settings in as `StorageAccess`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import endpoints
from resources.s3a import bucket_settings
from resources.secrets import unseal
from resources.storage import S3Store, split_location


@dataclass(frozen=True)
class StorageAccess:
    """What reaches a connection's buckets and queues: its name (errors say which connection),
    its ENDPOINT as written (None: the provider's own), its region, and its keys as sealed
    references, unsealed only as a client is built."""

    connection: str
    endpoint: str | None = None
    region: str | None = None
    access_id: str | None = None
    access_key: str | None = None


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


def _client_settings(access: StorageAccess, lake_home: Path) -> dict[str, Any]:
    """Endpoint, region and credentials shared by the S3 and SQS clients of one connection."""
    endpoint = endpoint_url(access.connection, access.endpoint)
    return {
        "endpoint_url": endpoint,
        "region_name": access.region or "us-east-1",
        "aws_access_key_id": unseal(access.access_id, lake_home),
        "aws_secret_access_key": unseal(access.access_key, lake_home),
    }


def s3_client(access: StorageAccess, lake_home: Path) -> object:
    """A boto3 S3 client through dagster-aws' S3Resource; secrets are unsealed only here."""
    from dagster_aws.s3 import S3Resource  # imported on use: it costs ~1 s at definitions load

    return S3Resource(**_client_settings(access, lake_home)).get_client()


def sqs_client(access: StorageAccess, lake_home: Path) -> object:
    """A boto3 SQS client on the same endpoint, region and credentials as the S3 client."""
    import boto3  # imported on use, as dagster-aws is for S3

    return boto3.session.Session().client("sqs", **_client_settings(access, lake_home))


def s3_store(
    access: StorageAccess, location: str, cache: Path, lake_home: Path, *, in_place: bool = False
) -> S3Store:
    """The files at a bucket location, copies of them kept under `cache`; `in_place`: Spark
    reads the objects through S3A, where a cluster's executors reach them, rather than through
    this machine's copies."""
    _, bucket, path = split_location(location)
    client = _client_settings(access, lake_home)
    s3a = None
    if in_place:
        keys = client["aws_access_key_id"], client["aws_secret_access_key"]
        s3a = bucket_settings(bucket, client["endpoint_url"], client["region_name"], *keys)
    return S3Store(s3_client(access, lake_home), bucket, path, cache, s3a)
