"""A volume's store and queue from its entry and its connection's: the location's scheme picks
the store, the connection's type must match it, a bucket's copies are cached per volume, and
the connection's sealed keys reach the clients. No Spark, and no bucket or queue is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.errors import LakeError
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.stores import open_queue, open_store, storage_access
from resources.secrets import seal
from resources.storage import LocalStore, S3Store
from resources.volumes import StorageAccess

# An endpoint no test calls: stores and queues are only built.
NOWHERE = "http://127.0.0.1:1"
LOCAL = ConnectionEntry(name="c", created_at="", type="LOCAL")


@pytest.fixture
def lake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LAKE_SECRET_KEY", raising=False)
    monkeypatch.delenv("LAKE_ENDPOINTS", raising=False)
    return tmp_path / "lake"


def bucket_connection(lake_home: Path, type: str = "S3") -> ConnectionEntry:
    """Connection c, its keys sealed with the LAKE_HOME's key as the catalog keeps them."""
    return ConnectionEntry(
        name="c",
        created_at="",
        type=type,
        endpoint=NOWHERE,
        access_id=seal("id", lake_home),
        access_key=seal("key", lake_home),
        region="eu-west-1",
    )


def volume(location: str, queue_name: str | None = None) -> VolumeEntry:
    return VolumeEntry(
        name="landing", created_at="", location=location, connection="c", queue_name=queue_name
    )


def test_the_clients_get_the_connections_endpoint_region_and_sealed_keys(lake_home):
    connection = bucket_connection(lake_home)
    assert storage_access(connection) == StorageAccess(
        "c", NOWHERE, "eu-west-1", connection.access_id, connection.access_key
    )


def test_a_bucket_location_is_an_s3_store_cached_under_the_volumes_name(lake_home):
    connection = bucket_connection(lake_home, "OSS")
    store = open_store(volume("oss://bucket/raw/events/"), connection, lake_home)
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix) == ("bucket", "raw/events/")
    assert store.cache == lake_home / "cache" / "volumes" / "landing"
    assert store.s3a is None  # read through this machine's copies unless opened in place


def test_a_bucket_opened_in_place_reads_with_the_connections_unsealed_keys(lake_home):
    connection = bucket_connection(lake_home)
    store = open_store(volume("s3://bucket/raw/"), connection, lake_home, in_place=True)
    assert isinstance(store, S3Store)
    assert store.s3a is not None
    assert store.s3a["fs.s3a.bucket.bucket.access.key"] == "id"
    assert store.s3a["fs.s3a.bucket.bucket.secret.key"] == "key"


def test_a_file_location_is_a_local_store(tmp_path, lake_home):
    store = open_store(volume((tmp_path / "files").as_uri() + "/"), LOCAL, lake_home)
    assert isinstance(store, LocalStore)
    assert store.root == tmp_path / "files"


def test_a_file_location_with_a_bucket_connection_is_refused(tmp_path, lake_home):
    with pytest.raises(LakeError, match="file:// location but connection c is S3") as caught:
        open_store(volume(tmp_path.as_uri() + "/"), bucket_connection(lake_home), lake_home)
    assert "LOCAL connection" in caught.value.fix


def test_a_bucket_location_with_a_local_connection_is_refused(lake_home):
    with pytest.raises(LakeError, match="object storage but connection c is LOCAL"):
        open_store(volume("s3://bucket/data/"), LOCAL, lake_home)


def test_a_bucket_root_is_refused(lake_home):
    with pytest.raises(LakeError, match="bucket root"):
        open_store(volume("s3://bucket/"), bucket_connection(lake_home), lake_home)


def test_the_queue_is_the_one_the_notification_clause_names(lake_home):
    notified = volume("s3://bucket/raw/", queue_name="events")
    queue = open_queue(notified, bucket_connection(lake_home), lake_home)
    assert (queue.name, queue.volume) == ("events", "landing")


def test_a_volume_without_a_notification_queue_has_none_to_open(lake_home):
    with pytest.raises(LakeError, match="volume landing has no NOTIFICATION queue") as caught:
        open_queue(volume("s3://bucket/raw/"), bucket_connection(lake_home), lake_home)
    assert "NOTIFICATION = (QUEUE_TYPE = 'AWS_SQS'" in caught.value.fix
