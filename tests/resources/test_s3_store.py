"""A volume's files in an S3 bucket, against a moto server in another process: clients built
from a connection's plain settings, listing, copies cached locally, writes and deletes that stay
inside the volume, and what an S3 event names."""

from __future__ import annotations

import uuid
from datetime import UTC
from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from resources.secrets import seal
from resources.storage import FileInfo, S3Store
from resources.volumes import StorageAccess, s3_client, s3_store
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION


@pytest.fixture
def lake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LAKE_SECRET_KEY", raising=False)
    return tmp_path / "lake"


def write(path: Path, content: str = "id\n1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def paths(files: list[FileInfo]) -> list[str]:
    return [info.relative_path for info in files]


def access(endpoint: str, lake_home: Path, **changes: str | None) -> StorageAccess:
    """Connection c's access, its keys sealed with the LAKE_HOME's key as the catalog keeps them."""
    fields: dict[str, str | None] = {
        "endpoint": endpoint,
        "access_id": seal(ACCESS_ID, lake_home),
        "access_key": seal(ACCESS_KEY, lake_home),
        "region": REGION,
        **changes,
    }
    return StorageAccess("c", **fields)


def store_at(location: str, endpoint: str, lake_home: Path) -> S3Store:
    """The store of a bucket location, its copies cached under the LAKE_HOME."""
    return s3_store(access(endpoint, lake_home), location, lake_home / "cache", lake_home)


# Objects of a filled bucket: the volume is s3://<bucket>/data/.
VOLUME_KEYS = (
    "data/a.csv",
    "data/sub/b.csv",
    "data/sub/deep/c.csv",
    "data/_SUCCESS",
    "data/.hidden",
    "data/sub/_delta_log/0.json",
    "data/sub/d.csv.tmp",
    "data/e.csv._COPYING_",
    "data/",  # folder markers, as consoles create them
    "data/sub/empty/",
)
OUTSIDE_KEYS = ("data.csv", "database/x.csv", "datax/y.csv", "other/z.csv")


@pytest.fixture(scope="module")
def s3_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("s3-lake")


@pytest.fixture(scope="module")
def s3(s3_endpoint: str, s3_home: Path):
    """A plain client, to arrange and inspect the bucket behind a store's back."""
    return s3_client(access(s3_endpoint, s3_home), s3_home)


def new_bucket(s3, fill: bool = False) -> str:
    name = f"test-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    for key in (*VOLUME_KEYS, *OUTSIDE_KEYS) if fill else ():
        body = b"" if key.endswith("/") else f"content of {key}\n".encode()
        s3.put_object(Bucket=name, Key=key, Body=body)
    return name


@pytest.fixture
def bucket(s3) -> str:
    return new_bucket(s3)


@pytest.fixture
def bucket_store(s3_endpoint, lake_home, bucket) -> S3Store:
    return store_at(f"s3://{bucket}/data/", s3_endpoint, lake_home)


@pytest.fixture(scope="module")
def filled(s3_endpoint, s3_home, s3) -> S3Store:
    """A volume over a bucket of data, hidden files and other folders; only read, never changed."""
    location = f"s3://{new_bucket(s3, fill=True)}/data/"
    return store_at(location, s3_endpoint, s3_home)


def test_s3_client_uses_the_endpoint_and_unsealed_credentials(s3_endpoint, lake_home):
    client = s3_client(access(s3_endpoint, lake_home), lake_home)
    assert client.meta.endpoint_url == s3_endpoint
    assert client.meta.region_name == REGION
    credentials = client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == (ACCESS_ID, ACCESS_KEY)


def test_s3_client_reads_env_references_when_it_is_built(s3_endpoint, lake_home, monkeypatch):
    references = {"access_id": "env:LAKE_CONN_T_ID", "access_key": "env:LAKE_CONN_T_KEY"}
    referenced = access(s3_endpoint, lake_home, **references)
    monkeypatch.setenv("LAKE_CONN_T_ID", ACCESS_ID)
    monkeypatch.setenv("LAKE_CONN_T_KEY", ACCESS_KEY)
    s3_client(referenced, lake_home).create_bucket(Bucket=f"env-{uuid.uuid4().hex[:12]}")
    monkeypatch.delenv("LAKE_CONN_T_KEY")
    with pytest.raises(LakeError, match="LAKE_CONN_T_KEY is not set"):
        s3_client(referenced, lake_home)


def test_s3_client_defaults_to_https_and_us_east_1(lake_home):
    client = s3_client(access("minio.example:9000", lake_home, region=None), lake_home)
    assert client.meta.endpoint_url == "https://minio.example:9000"
    assert client.meta.region_name == "us-east-1"


def test_s3_list_is_recursive_and_stays_inside_the_prefix(filled):
    assert paths(filled.list()) == ["a.csv", "sub/b.csv", "sub/deep/c.csv"]


def test_s3_list_without_recursion_lists_one_level(filled):
    assert paths(filled.list(recursive=False)) == ["a.csv"]
    assert paths(filled.list("sub", recursive=False)) == ["sub/b.csv"]


@pytest.mark.parametrize("prefix", ["sub", "/sub/", "sub/", "./sub"])
def test_s3_list_of_a_subdirectory_keeps_paths_relative_to_the_volume(filled, prefix):
    assert paths(filled.list(prefix)) == ["sub/b.csv", "sub/deep/c.csv"]


def test_s3_list_of_a_subdirectory_matches_whole_folder_names(filled):
    assert filled.list("su") == []
    assert filled.list("nope") == []
    assert filled.list("sub/_delta_log") == []


def test_s3_list_refuses_a_subdirectory_outside_the_volume(filled):
    with pytest.raises(LakeError, match="leaves the volume"):
        filled.list("../other")


def test_s3_file_info_has_size_time_etag_and_url(filled, s3):
    [info] = filled.list("sub/deep")
    head = s3.head_object(Bucket=filled.bucket, Key="data/sub/deep/c.csv")
    assert info.relative_path == "sub/deep/c.csv"
    assert info.size == len(b"content of data/sub/deep/c.csv\n")
    assert info.etag == head["ETag"].strip('"')
    assert info.last_modified.tzinfo == UTC
    assert info.last_modified == head["LastModified"]
    assert info.url == f"s3://{filled.bucket}/data/sub/deep/c.csv"


def test_s3_list_follows_every_page(bucket_store, s3, bucket, monkeypatch):
    for number in range(7):
        s3.put_object(Bucket=bucket, Key=f"data/many/{number}.csv", Body=b"x")
    pages = []
    paginator = bucket_store.client.get_paginator("list_objects_v2")
    paginate = paginator.paginate

    def two_per_page(**arguments):
        for page in paginate(**arguments, PaginationConfig={"PageSize": 2}):
            pages.append(page)
            yield page

    monkeypatch.setattr(paginator, "paginate", two_per_page)
    monkeypatch.setattr(bucket_store.client, "get_paginator", lambda name: paginator)
    listed = bucket_store.list("many")
    assert len(pages) == 4
    assert paths(listed) == [f"many/{number}.csv" for number in range(7)]


def test_s3_put_then_local_path_round_trips_through_the_cache(bucket_store, s3, bucket, tmp_path):
    source = write(tmp_path / "upload.csv", "id\n42\n")
    bucket_store.put(source, "/in/./upload.csv")

    body = s3.get_object(Bucket=bucket, Key="data/in/upload.csv")["Body"].read()
    assert body == b"id\n42\n"
    assert paths(bucket_store.list()) == ["in/upload.csv"]

    local = bucket_store.local_path("in/upload.csv")
    etag = s3.head_object(Bucket=bucket, Key="data/in/upload.csv")["ETag"].strip('"')
    assert local == bucket_store.cache / bucket / etag / "data" / "in" / "upload.csv"
    assert local.read_text() == "id\n42\n"
    assert sorted(p.name for p in local.parent.iterdir()) == ["upload.csv"]


def test_s3_put_refuses_paths_outside_the_volume(bucket_store, s3, bucket, tmp_path):
    source = write(tmp_path / "upload.csv")
    with pytest.raises(LakeError, match="leaves the volume"):
        bucket_store.put(source, "../escaped.csv")
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)


def test_s3_local_path_is_cached_under_the_cache_folder(s3_endpoint, lake_home, bucket, s3):
    s3.put_object(Bucket=bucket, Key="data/a.csv", Body=b"first")
    store = store_at(f"s3://{bucket}/data/", s3_endpoint, lake_home)
    assert store.cache == lake_home / "cache"

    first = store.local_path("a.csv")
    assert first.is_relative_to(lake_home / "cache")
    downloaded = first.stat().st_mtime_ns
    assert store.local_path("a.csv") == first  # served from the cache, not downloaded again
    assert first.stat().st_mtime_ns == downloaded
    assert first.read_bytes() == b"first"


def test_s3_local_path_of_a_replaced_object_is_its_new_content(bucket_store, s3, bucket):
    s3.put_object(Bucket=bucket, Key="data/a.csv", Body=b"version 1")
    assert bucket_store.local_path("a.csv").read_bytes() == b"version 1"
    s3.put_object(Bucket=bucket, Key="data/a.csv", Body=b"version 2, longer")
    assert bucket_store.local_path("a.csv").read_bytes() == b"version 2, longer"


def test_s3_local_path_refuses_paths_outside_the_volume(filled):
    with pytest.raises(LakeError, match="leaves the volume"):
        filled.local_path("../other/z.csv")


def test_s3_delete_removes_the_object_only(s3_endpoint, lake_home, s3):
    bucket = new_bucket(s3, fill=True)
    store = store_at(f"s3://{bucket}/data/", s3_endpoint, lake_home)

    def keys() -> set[str]:
        return {item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]}

    store.delete("sub/b.csv")
    assert paths(store.list()) == ["a.csv", "sub/deep/c.csv"]
    assert keys() == set(VOLUME_KEYS) - {"data/sub/b.csv"} | set(OUTSIDE_KEYS)
    store.delete("sub/b.csv")  # deleting a missing object is not an error
    with pytest.raises(LakeError, match="leaves the volume"):
        store.delete("../other/z.csv")
    assert "other/z.csv" in keys()


def test_two_volumes_in_one_bucket_see_only_their_own_files(s3_endpoint, lake_home, bucket, s3):
    s3.put_object(Bucket=bucket, Key="one/a.csv", Body=b"1")
    s3.put_object(Bucket=bucket, Key="one-more/b.csv", Body=b"2")
    one = store_at(f"s3://{bucket}/one", s3_endpoint, lake_home)
    more = store_at(f"s3://{bucket}/one-more/", s3_endpoint, lake_home)
    assert paths(one.list()) == ["a.csv"]
    assert paths(more.list()) == ["b.csv"]


# s3_store(): a bucket location, opened in place for a cluster's executors


def test_s3_store_in_place_gives_spark_the_buckets_own_s3a_settings(lake_home):
    endpoint = "http://127.0.0.1:1"  # never called: the store is only built
    store = s3_store(
        access(endpoint, lake_home), "s3://bucket/raw/", lake_home, lake_home, in_place=True
    )
    assert (store.bucket, store.prefix) == ("bucket", "raw/")
    assert store.s3a is not None
    prefix = "fs.s3a.bucket.bucket."
    settings = {key.removeprefix(prefix): value for key, value in store.s3a.items()}
    assert (settings["endpoint"], settings["endpoint.region"]) == (endpoint, REGION)
    assert (settings["access.key"], settings["secret.key"]) == (ACCESS_ID, ACCESS_KEY)


def test_s3_store_refuses_a_bucket_root(lake_home):
    with pytest.raises(LakeError, match="bucket root"):
        store_at("s3://bucket/", "http://127.0.0.1:1", lake_home)


# S3Store.relative() and stat(): what an S3 event names, mapped into the volume and looked up


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("data/a.csv", "a.csv"),
        ("data/sub/deep/c d.csv", "sub/deep/c d.csv"),
        ("data/sub/", None),  # a folder marker
        ("data/../other/z.csv", None),  # leaves the volume
        ("data/sub//b.csv", None),  # not a normal path: no listing would show it so
        ("data/_SUCCESS", None),
        ("data/sub/.hidden.csv", None),
        ("data/a.csv.tmp", None),
        ("database/x.csv", None),
        ("other/z.csv", None),
    ],
)
def test_s3_relative_maps_keys_inside_the_volume_only(filled, key, expected):
    assert filled.relative(filled.bucket, key) == expected


def test_s3_relative_refuses_another_buckets_keys(filled):
    assert filled.relative("another-bucket", "data/a.csv") is None


def test_s3_stat_is_what_a_listing_says_or_none(filled):
    (listed,) = [info for info in filled.list() if info.relative_path == "a.csv"]
    assert filled.stat("a.csv") == listed
    assert filled.stat("missing.csv") is None
    with pytest.raises(LakeError, match="leaves the volume"):
        filled.stat("../other/z.csv")
