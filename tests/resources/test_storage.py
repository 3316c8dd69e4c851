"""Volume storage: path containment, locations, a local directory and an S3 bucket over HTTP."""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC
from pathlib import Path

import pytest

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.errors import LakeError
from lake_assets.volumes.entry import VolumeEntry
from resources import storage
from resources.secrets import seal
from resources.storage import LocalStore, S3Store, inside, is_visible, split_location
from resources.volumes import open_store, s3_client
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION


@pytest.fixture
def lake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LAKE_SECRET_KEY", raising=False)
    return tmp_path / "lake"


def write(path: Path, content: str = "id\n1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


# inside(): every path is normalised relative to the volume and never leaves it


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", ""),
        ("/", ""),
        (".", ""),
        ("./", ""),
        ("export/", "export"),
        ("/export/", "export"),
        ("a/./b", "a/b"),
        ("a//b/", "a/b"),
        ("a\\b\\c.csv", "a/b/c.csv"),
        ("  a/b.csv  ", "a/b.csv"),
        ("a..b/c", "a..b/c"),
    ],
)
def test_inside_normalises_paths_relative_to_the_volume(given, expected):
    assert inside(given) == expected


@pytest.mark.parametrize("given", ["..", "../x", "/../x", "a/../../x", "a/../b", "a\\..\\b"])
def test_inside_refuses_any_dot_dot(given):
    with pytest.raises(LakeError, match="leaves the volume") as caught:
        inside(given, "SUBDIRECTORY")
    assert caught.value.what == f"SUBDIRECTORY '{given}' leaves the volume"
    assert "'..'" in caught.value.fix


@pytest.mark.parametrize(
    "name", ["a.csv", "dir/a.csv", "keep_me.csv", "a.tmp.csv", "a.partial.json", "under_score"]
)
def test_data_files_are_visible(name):
    assert is_visible(name)


@pytest.mark.parametrize(
    "name",
    [
        ".hidden",
        "dir/.hidden.csv",
        "_SUCCESS",
        "dir/_delta_log",
        "a.csv.tmp",
        "a.csv.partial",
        "a.csv.crdownload",
        "a.csv._COPYING_",
        "a.csv.inprogress",
    ],
)
def test_hidden_and_half_written_files_are_not_visible(name):
    assert not is_visible(name)


# split_location()


def test_a_file_location_is_an_absolute_directory():
    assert split_location("file:///abs/dir/") == ("file", "", "/abs/dir/")
    assert split_location("file:///abs/dir") == ("file", "", "/abs/dir/")
    assert split_location("FILE:///abs/dir/") == ("file", "", "/abs/dir/")


@pytest.mark.parametrize("location", ["file:///", "file://", "file:relative/dir/"])
def test_a_file_location_must_be_an_absolute_directory_other_than_the_root(location):
    with pytest.raises(LakeError, match="not an absolute directory"):
        split_location(location)


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("s3://bucket/data/", ("s3", "bucket", "data/")),
        ("s3://bucket/data", ("s3", "bucket", "data/")),
        ("s3://bucket/a/b/", ("s3", "bucket", "a/b/")),
        ("S3A://bucket/data/", ("s3a", "bucket", "data/")),
        ("oss://bucket/data/", ("oss", "bucket", "data/")),
        ("cos://bucket/data/", ("cos", "bucket", "data/")),
    ],
)
def test_a_bucket_location_splits_into_bucket_and_prefix(location, expected):
    assert split_location(location) == expected


@pytest.mark.parametrize("location", ["s3://bucket", "s3://bucket/", "s3://bucket//"])
def test_a_bucket_root_is_refused(location):
    with pytest.raises(LakeError, match="bucket root") as caught:
        split_location(location)
    assert "s3://bucket/data/" in caught.value.fix


def test_a_bucket_location_needs_a_bucket():
    with pytest.raises(LakeError, match="names no bucket"):
        split_location("s3:///data/")


@pytest.mark.parametrize("location", ["http://host/data/", "gs://bucket/data/", "/abs/dir/", ""])
def test_an_unsupported_scheme_is_refused(location):
    with pytest.raises(LakeError, match="unsupported scheme"):
        split_location(location)


# LocalStore


@pytest.fixture
def local(tmp_path: Path) -> LocalStore:
    root = tmp_path / "volume"
    for name in (
        "a.csv",
        "sub/b.csv",
        "sub/deep/c.csv",
        ".hidden",
        "_SUCCESS",
        "sub/_delta_log/0.json",
        ".staging/d.csv",
        "e.csv.tmp",
        "sub/f.csv.partial",
        "g.csv._COPYING_",
    ):
        write(root / name, f"content of {name}\n")
    (root / "empty-dir").mkdir()
    return LocalStore(root)


def paths(files: list[storage.FileInfo]) -> list[str]:
    return [info.relative_path for info in files]


def test_local_list_is_recursive_sorted_and_skips_hidden_and_half_written_files(local):
    assert paths(local.list()) == ["a.csv", "sub/b.csv", "sub/deep/c.csv"]


def test_local_list_without_recursion_lists_one_level(local):
    assert paths(local.list(recursive=False)) == ["a.csv"]
    assert paths(local.list("sub", recursive=False)) == ["sub/b.csv"]


@pytest.mark.parametrize("prefix", ["sub", "/sub/", "sub/", "./sub"])
def test_local_list_of_a_subdirectory_keeps_paths_relative_to_the_volume(local, prefix):
    assert paths(local.list(prefix)) == ["sub/b.csv", "sub/deep/c.csv"]


def test_local_list_of_a_missing_or_hidden_subdirectory_is_empty(local):
    assert local.list("nope") == []
    assert local.list("a.csv") == []
    assert local.list("sub/_delta_log") == []


def test_local_list_refuses_a_subdirectory_outside_the_volume(local):
    with pytest.raises(LakeError, match=r"SUBDIRECTORY '\.\./volume' leaves the volume"):
        local.list("../volume")


def test_local_file_info_has_size_time_etag_and_url(local):
    [info] = local.list("sub/deep")
    path = local.root / "sub/deep/c.csv"
    assert info.size == path.stat().st_size == len("content of sub/deep/c.csv\n")
    assert info.last_modified.tzinfo == UTC
    assert info.last_modified.timestamp() == pytest.approx(path.stat().st_mtime)
    assert info.url == path.as_uri()
    assert info.etag


def test_local_etag_changes_when_the_file_changes(local):
    [before] = local.list(recursive=False)
    write(local.root / "a.csv", "a different, longer content\n")
    [after] = local.list(recursive=False)
    assert after.etag != before.etag
    assert after.size != before.size


def test_local_path_is_inside_the_root(local):
    assert local.local_path("sub/b.csv") == local.root / "sub" / "b.csv"
    assert local.local_path("/sub/./b.csv") == local.root / "sub" / "b.csv"
    with pytest.raises(LakeError, match="leaves the volume"):
        local.local_path("../outside.csv")


def test_local_put_creates_folders_and_leaves_no_staging_file(local, tmp_path):
    source = write(tmp_path / "upload.csv", "id\n42\n")
    local.put(source, "new/deeper/upload.csv")
    target = local.root / "new" / "deeper" / "upload.csv"
    assert target.read_text() == "id\n42\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["upload.csv"]
    assert "new/deeper/upload.csv" in paths(local.list())


def test_local_put_writes_elsewhere_and_renames_so_readers_see_old_or_new(
    local, tmp_path, monkeypatch
):
    target = local.root / "a.csv"
    source = write(tmp_path / "upload.csv", "the new content\n")
    seen_while_copying = []
    copyfile = shutil.copyfile

    def copy_and_look(src, dst):
        seen_while_copying.append((Path(dst), target.read_text()))
        return copyfile(src, dst)

    monkeypatch.setattr(storage.shutil, "copyfile", copy_and_look)
    local.put(source, "a.csv")

    [(staging, target_content)] = seen_while_copying
    assert staging != target
    assert staging.parent == target.parent
    assert not is_visible(staging.name), "the half-written copy must never be listed"
    assert target_content == "content of a.csv\n"
    assert target.read_text() == "the new content\n"
    assert not staging.exists()


def test_local_put_that_fails_midway_leaves_the_target_untouched(local, tmp_path, monkeypatch):
    source = write(tmp_path / "upload.csv", "the new content\n")

    def copy_half_then_fail(src, dst):
        Path(dst).write_text("the ne")
        raise OSError("disk full")

    monkeypatch.setattr(storage.shutil, "copyfile", copy_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        local.put(source, "a.csv")
    assert (local.root / "a.csv").read_text() == "content of a.csv\n"
    assert paths(local.list(recursive=False)) == ["a.csv"]


def test_local_delete_removes_a_file_and_ignores_a_missing_one(local):
    local.delete("sub/b.csv")
    assert not (local.root / "sub" / "b.csv").exists()
    assert paths(local.list()) == ["a.csv", "sub/deep/c.csv"]
    local.delete("sub/b.csv")
    with pytest.raises(LakeError, match="leaves the volume"):
        local.delete("../volume/a.csv")


# S3Store, against a moto server in another process


def connection(endpoint: str, lake_home: Path, **changes: str | None) -> ConnectionEntry:
    fields: dict[str, str | None] = {
        "type": "S3",
        "endpoint": endpoint,
        "access_id": seal(ACCESS_ID, lake_home),
        "access_key": seal(ACCESS_KEY, lake_home),
        "region": REGION,
        **changes,
    }
    return ConnectionEntry(name="c", created_at="", **fields)


def volume(location: str, name: str = "landing") -> VolumeEntry:
    return VolumeEntry(name=name, created_at="", location=location, connection="c")


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
    return s3_client(connection(s3_endpoint, s3_home), s3_home)


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
def s3_store(s3_endpoint, lake_home, bucket) -> S3Store:
    store = open_store(
        volume(f"s3://{bucket}/data/"), connection(s3_endpoint, lake_home), lake_home
    )
    assert isinstance(store, S3Store)
    return store


@pytest.fixture(scope="module")
def filled(s3_endpoint, s3_home, s3) -> S3Store:
    """A volume over a bucket of data, hidden files and other folders; only read, never changed."""
    location = f"s3://{new_bucket(s3, fill=True)}/data/"
    return open_store(volume(location), connection(s3_endpoint, s3_home), s3_home)


def test_s3_client_uses_the_endpoint_and_unsealed_credentials(s3_endpoint, lake_home):
    client = s3_client(connection(s3_endpoint, lake_home), lake_home)
    assert client.meta.endpoint_url == s3_endpoint
    assert client.meta.region_name == REGION
    credentials = client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == (ACCESS_ID, ACCESS_KEY)


def test_s3_client_reads_env_references_when_it_is_built(s3_endpoint, lake_home, monkeypatch):
    references = {"access_id": "env:LAKE_CONN_T_ID", "access_key": "env:LAKE_CONN_T_KEY"}
    entry = connection(s3_endpoint, lake_home, **references)
    monkeypatch.setenv("LAKE_CONN_T_ID", ACCESS_ID)
    monkeypatch.setenv("LAKE_CONN_T_KEY", ACCESS_KEY)
    s3_client(entry, lake_home).create_bucket(Bucket=f"env-{uuid.uuid4().hex[:12]}")
    monkeypatch.delenv("LAKE_CONN_T_KEY")
    with pytest.raises(LakeError, match="LAKE_CONN_T_KEY is not set"):
        s3_client(entry, lake_home)


def test_s3_client_defaults_to_https_and_us_east_1(lake_home):
    client = s3_client(connection("minio.example:9000", lake_home, region=None), lake_home)
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


def test_s3_list_follows_every_page(s3_store, s3, bucket, monkeypatch):
    for number in range(7):
        s3.put_object(Bucket=bucket, Key=f"data/many/{number}.csv", Body=b"x")
    pages = []
    paginator = s3_store.client.get_paginator("list_objects_v2")
    paginate = paginator.paginate

    def two_per_page(**arguments):
        for page in paginate(**arguments, PaginationConfig={"PageSize": 2}):
            pages.append(page)
            yield page

    monkeypatch.setattr(paginator, "paginate", two_per_page)
    monkeypatch.setattr(s3_store.client, "get_paginator", lambda name: paginator)
    listed = s3_store.list("many")
    assert len(pages) == 4
    assert paths(listed) == [f"many/{number}.csv" for number in range(7)]


def test_s3_put_then_local_path_round_trips_through_the_cache(s3_store, s3, bucket, tmp_path):
    source = write(tmp_path / "upload.csv", "id\n42\n")
    s3_store.put(source, "/in/./upload.csv")

    body = s3.get_object(Bucket=bucket, Key="data/in/upload.csv")["Body"].read()
    assert body == b"id\n42\n"
    assert paths(s3_store.list()) == ["in/upload.csv"]

    local = s3_store.local_path("in/upload.csv")
    etag = s3.head_object(Bucket=bucket, Key="data/in/upload.csv")["ETag"].strip('"')
    assert local == s3_store.cache / bucket / etag / "data" / "in" / "upload.csv"
    assert local.read_text() == "id\n42\n"
    assert sorted(p.name for p in local.parent.iterdir()) == ["upload.csv"]


def test_s3_put_refuses_paths_outside_the_volume(s3_store, s3, bucket, tmp_path):
    source = write(tmp_path / "upload.csv")
    with pytest.raises(LakeError, match="leaves the volume"):
        s3_store.put(source, "../escaped.csv")
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)


def test_s3_local_path_is_cached_under_the_lake_home(s3_endpoint, lake_home, bucket, s3):
    s3.put_object(Bucket=bucket, Key="data/a.csv", Body=b"first")
    entry = connection(s3_endpoint, lake_home)
    store = open_store(volume(f"s3://{bucket}/data/", name="vol"), entry, lake_home)
    assert store.cache == lake_home / "cache" / "volumes" / "vol"

    first = store.local_path("a.csv")
    assert first.is_relative_to(lake_home / "cache" / "volumes" / "vol")
    downloaded = first.stat().st_mtime_ns
    assert store.local_path("a.csv") == first  # served from the cache, not downloaded again
    assert first.stat().st_mtime_ns == downloaded
    assert first.read_bytes() == b"first"


def test_s3_local_path_of_a_replaced_object_is_its_new_content(s3_store, s3, bucket):
    s3.put_object(Bucket=bucket, Key="data/a.csv", Body=b"version 1")
    assert s3_store.local_path("a.csv").read_bytes() == b"version 1"
    s3.put_object(Bucket=bucket, Key="data/a.csv", Body=b"version 2, longer")
    assert s3_store.local_path("a.csv").read_bytes() == b"version 2, longer"


def test_s3_local_path_refuses_paths_outside_the_volume(filled):
    with pytest.raises(LakeError, match="leaves the volume"):
        filled.local_path("../other/z.csv")


def test_s3_delete_removes_the_object_only(s3_endpoint, lake_home, s3):
    bucket = new_bucket(s3, fill=True)
    store = open_store(
        volume(f"s3://{bucket}/data/"), connection(s3_endpoint, lake_home), lake_home
    )

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
    entry = connection(s3_endpoint, lake_home)
    one = open_store(volume(f"s3://{bucket}/one"), entry, lake_home)
    more = open_store(volume(f"s3://{bucket}/one-more/", "more"), entry, lake_home)
    assert paths(one.list()) == ["a.csv"]
    assert paths(more.list()) == ["b.csv"]


# open_store(): the location's scheme picks the store; the connection type must match


def test_open_store_of_a_bucket_location_is_an_s3_store(s3_endpoint, lake_home):
    entry = connection(s3_endpoint, lake_home, type="OSS")
    store = open_store(volume("oss://bucket/raw/events/"), entry, lake_home)
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix) == ("bucket", "raw/events/")
    assert store.cache == lake_home / "cache" / "volumes" / "landing"


def test_open_store_of_a_file_location_is_a_local_store(tmp_path, lake_home):
    entry = ConnectionEntry(name="c", created_at="", type="LOCAL")
    store = open_store(volume((tmp_path / "files").as_uri() + "/"), entry, lake_home)
    assert isinstance(store, LocalStore)
    assert store.root == tmp_path / "files"


def test_open_store_refuses_a_file_location_with_a_bucket_connection(tmp_path, lake_home):
    entry = connection("http://127.0.0.1:1", lake_home)
    with pytest.raises(LakeError, match="file:// location but connection c is S3") as caught:
        open_store(volume(tmp_path.as_uri() + "/"), entry, lake_home)
    assert "LOCAL connection" in caught.value.fix


def test_open_store_refuses_a_bucket_location_with_a_local_connection(lake_home):
    entry = ConnectionEntry(name="c", created_at="", type="LOCAL")
    with pytest.raises(LakeError, match="object storage but connection c is LOCAL"):
        open_store(volume("s3://bucket/data/"), entry, lake_home)


def test_open_store_refuses_a_bucket_root(s3_endpoint, lake_home):
    with pytest.raises(LakeError, match="bucket root"):
        open_store(volume("s3://bucket/"), connection(s3_endpoint, lake_home), lake_home)


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


def test_local_stat_is_what_a_listing_says_or_none(tmp_path):
    write(tmp_path / "vol" / "sub" / "a.csv")
    store = LocalStore(tmp_path / "vol")
    (listed,) = store.list()
    assert store.stat("sub/a.csv") == listed
    assert store.stat("sub/missing.csv") is None
