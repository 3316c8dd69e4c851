"""Hadoop S3A settings: the warehouse's, for the whole session, and a volume bucket's, which
ride on the reads of that volume's files only."""

from __future__ import annotations

from urllib.parse import urlparse

# Keys S3A reads for one bucket, before its settings for every bucket.
_BUCKET = "fs.s3a.bucket.{bucket}."
_KEYS_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"


def endpoint_settings(endpoint: str | None, region: str | None) -> dict[str, str]:
    """S3A's endpoint and region settings (without the `fs.s3a.` prefix)."""
    settings = {"endpoint.region": region} if region else {}
    if endpoint:
        # A server of its own (MinIO, moto, another cloud's S3 API): buckets in the path.
        settings.update({"endpoint": endpoint, "path.style.access": "true"})
        if urlparse(endpoint).scheme == "http":
            settings["connection.ssl.enabled"] = "false"
    return settings


def bucket_settings(
    bucket: str,
    endpoint: str | None,
    region: str | None,
    access_id: str | None,
    secret: str | None,
) -> dict[str, str]:
    """One bucket's S3A settings, as options of a read: they leave the session's own alone. The
    keys end in `access.key` and `secret.key`, which Spark redacts wherever it shows settings."""
    settings = endpoint_settings(endpoint, region)
    if access_id and secret:
        settings.update(
            {
                "aws.credentials.provider": _KEYS_PROVIDER,
                "access.key": access_id,
                "secret.key": secret,
            }
        )
    prefix = _BUCKET.format(bucket=bucket)
    return {prefix + key: value for key, value in settings.items()}
