"""Open a volume's store from its catalog entry: local files, or S3 through dagster-aws."""

from __future__ import annotations

from pathlib import Path

from resources.entries import ConnectionEntry, VolumeEntry
from resources.errors import LakeError
from resources.secrets import unseal
from resources.storage import LocalStore, S3Store, VolumeStore, split_location


def s3_client(connection: ConnectionEntry, lake_home: Path) -> object:
    """A boto3 S3 client through dagster-aws' S3Resource; secrets are unsealed only here."""
    from dagster_aws.s3 import S3Resource  # imported on use: it costs ~1 s at definitions load

    endpoint = connection.endpoint
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    return S3Resource(
        endpoint_url=endpoint,
        region_name=connection.region or "us-east-1",
        aws_access_key_id=unseal(connection.access_id, lake_home),
        aws_secret_access_key=unseal(connection.access_key, lake_home),
    ).get_client()


def open_store(volume: VolumeEntry, connection: ConnectionEntry, lake_home: Path) -> VolumeStore:
    scheme, bucket, path = split_location(volume.location)
    if scheme == "file":
        if connection.type != "LOCAL":
            raise LakeError(
                f"volume {volume.name} is a file:// location but connection {connection.name} "
                f"is {connection.type}",
                "use a LOCAL connection for file:// locations",
            )
        return LocalStore(Path(path))
    if connection.type == "LOCAL":
        raise LakeError(
            f"volume {volume.name} is in object storage but connection {connection.name} is LOCAL",
            "use an S3, OSS or COS connection for bucket locations",
        )
    cache = lake_home / "cache" / "volumes" / volume.name
    return S3Store(s3_client(connection, lake_home), bucket, path, cache)
