"""A volume whose bucket is missing, refuses the connection's keys or cannot be reached: one
line naming the bucket and the fix, and a CREATE that fails so leaves nothing behind (no catalog
entry, no directory table). On moto's S3 server."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from lake_assets.session import LakeSession
from lake_assets.volumes.entry import VolumeEntry
from resources.spark_server import free_port
from tests.ingest_helpers import refused
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, new_bucket


def _connection(lake: LakeSession, endpoint: str) -> None:
    lake.sql(
        f"CREATE STORAGE CONNECTION my_s3 TYPE S3 ENDPOINT = '{endpoint}' "
        f"ACCESS_ID = '{ACCESS_ID}' ACCESS_KEY = '{ACCESS_KEY}' REGION = '{REGION}'"
    )


def _create(bucket: str) -> str:
    return f"CREATE EXTERNAL VOLUME v LOCATION 's3://{bucket}/data/' USING CONNECTION my_s3"


def _nothing_left(lake: LakeSession) -> None:
    assert lake.catalog.find(VolumeEntry, "v") is None
    directories = lake.settings.warehouse / "_directories"
    assert sorted(directories.glob("*") if directories.exists() else []) == []


def _auth(endpoint: str, count: str) -> str:
    """Set how many requests moto's server lets through before it checks credentials; the
    count it had."""
    request = urllib.request.Request(
        f"{endpoint}/moto-api/reset-auth",
        data=count.encode(),
        method="POST",
        headers={"Content-Type": "text/plain"},
    )
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]


@contextmanager
def _checking_keys(endpoint: str) -> Iterator[None]:
    """moto's server checks every request's keys against its IAM, which knows none of them: each
    is refused with 403 (InvalidAccessKeyId), until the block ends."""
    previous = _auth(endpoint, "0")
    try:
        yield
    finally:
        _auth(endpoint, previous)


def test_a_volume_on_a_missing_bucket_is_one_line_and_leaves_nothing(
    lake: LakeSession, s3_endpoint: str
) -> None:
    _connection(lake, s3_endpoint)
    s3, bucket = new_bucket(s3_endpoint)
    s3.delete_bucket(Bucket=bucket)
    assert refused(lake, _create(bucket)) == (
        f"bucket {bucket} of volume v does not exist — create bucket {bucket}, or give the "
        "volume a LOCATION in an existing bucket"
    )
    _nothing_left(lake)

    s3.create_bucket(Bucket=bucket)
    lake.sql(_create(bucket))
    s3.delete_bucket(Bucket=bucket)  # gone later: every listing says so
    for statement in (
        "DESC VOLUME v",
        "ALTER VOLUME v REFRESH",
        "SELECT * FROM VOLUME v USING CSV",
    ):
        assert refused(lake, statement).startswith(f"bucket {bucket} of volume v does not exist")


def test_a_volume_on_a_bucket_that_refuses_the_keys_is_one_line_and_leaves_nothing(
    lake: LakeSession, s3_endpoint: str
) -> None:
    _connection(lake, s3_endpoint)
    _, bucket = new_bucket(s3_endpoint)
    with _checking_keys(s3_endpoint):
        assert refused(lake, _create(bucket)) == (
            f"bucket {bucket} of volume v refuses connection my_s3 (InvalidAccessKeyId) — "
            "check the ACCESS_ID and ACCESS_KEY of connection my_s3, and that the bucket's "
            f"policy lets them list and read s3://{bucket}/data/"
        )
    _nothing_left(lake)


def test_a_volume_whose_endpoint_does_not_answer_is_one_line_and_leaves_nothing(
    lake: LakeSession,
) -> None:
    _connection(lake, f"http://127.0.0.1:{free_port()}")
    message = refused(lake, _create("lake-unreached"))
    assert message.startswith(
        "cannot reach the object storage of volume v (connection my_s3): Could not connect to "
        "the endpoint URL"
    )
    assert message.endswith("check the ENDPOINT of connection my_s3 and that the server is up")
    _nothing_left(lake)
