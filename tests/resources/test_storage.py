"""Volume storage: path containment, locations and a local directory (an S3 bucket over HTTP:
test_s3_store.py)."""

from __future__ import annotations

import shutil
from datetime import UTC
from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from resources import storage
from resources.storage import LocalStore, inside, is_visible, split_location


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


def test_local_stat_is_what_a_listing_says_or_none(tmp_path):
    write(tmp_path / "vol" / "sub" / "a.csv")
    store = LocalStore(tmp_path / "vol")
    (listed,) = store.list()
    assert store.stat("sub/a.csv") == listed
    assert store.stat("sub/missing.csv") is None
