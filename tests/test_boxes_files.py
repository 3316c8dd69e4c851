"""User SQL reads files only through volumes, and no path inside a volume leaves it by a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from resources.storage import LocalStore, S3Store, split_location
from tests.ingest_helpers import local_volume

# User SQL reads files through volumes only


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM csv.`/etc/passwd`",
        "SELECT * FROM parquet.`/tmp/x`",
        "SELECT * FROM delta.`/path`",
        "SELECT * FROM text.`/etc/passwd`",
        "SELECT * FROM `json`.`file:///etc/x`",
        "WITH a AS (SELECT * FROM orc.`/x`) SELECT * FROM a",
        "SELECT * FROM t WHERE a IN (SELECT a FROM avro.`/x`)",
        "SELECT * FROM read_files('/etc')",
        "SELECT * FROM IDENTIFIER('csv.`/etc/passwd`')",
        "SELECT reflect('java.lang.System', 'getenv', 'LAKE_SECRET_KEY')",
        "SELECT java_method('java.lang.System', 'getenv', 'HOME')",
        "SELECT TRANSFORM(a) USING 'cat /etc/passwd' AS (b) FROM t",
        "INSERT OVERWRITE DIRECTORY '/tmp/out' SELECT * FROM t",
        "INSERT OVERWRITE LOCAL DIRECTORY '/tmp/out' SELECT * FROM t",
        "INSERT INTO t SELECT * FROM csv.`/etc/passwd`",
        "MERGE INTO t USING csv.`/x` AS s ON t.a = s.a WHEN MATCHED THEN DELETE",
        "CREATE DYNAMIC TABLE d AS SELECT * FROM csv.`/etc/passwd`",
        "CREATE TASK k AS INSERT INTO t SELECT * FROM text.`/etc/passwd`",
        "COPY INTO VOLUME v FROM (SELECT * FROM csv.`/etc/passwd`)",
    ],
)
def test_user_sql_does_not_reach_files_directly(statement):
    """(LOAD DATA, ADD JAR, SET, CREATE TABLE … USING … LOCATION are no statements of the
    dialect: they are refused as unsupported before any of this.)"""
    with pytest.raises(LakeError, match=r"directly|outside the catalog|runs a script") as caught:
        parse_statement(statement)
    assert "\n" not in str(caught.value)


# Paths inside volumes


@pytest.fixture
def linked(tmp_path: Path) -> tuple[LocalStore, Path]:
    """A volume holding a file, a link to a file outside and a link to a folder outside."""
    volume, outside = tmp_path / "volume", tmp_path / "outside"
    volume.mkdir()
    outside.mkdir()
    (volume / "inside.csv").write_text("a\n1\n")
    (outside / "secret.csv").write_text("a\n42\n")
    (volume / "leak.csv").symlink_to(outside / "secret.csv")
    (volume / "out").symlink_to(outside, target_is_directory=True)
    return LocalStore(volume), outside


def test_a_link_out_of_the_volume_is_neither_listed_nor_read(linked):
    store, _ = linked
    assert [info.relative_path for info in store.list()] == ["inside.csv"]
    with pytest.raises(LakeError, match="goes through a link"):
        store.list("out/")


def test_no_access_goes_through_a_link(linked, tmp_path):
    store, outside = linked
    source = tmp_path / "upload.csv"
    source.write_text("a\n7\n")
    for access in (
        lambda: store.stat("leak.csv"),
        lambda: store.local_path("leak.csv"),
        lambda: store.spark_path("out/secret.csv"),
        lambda: store.put(source, "out/new.csv"),
        lambda: store.put(source, "leak.csv"),
        lambda: store.delete("out/secret.csv"),
    ):
        with pytest.raises(LakeError, match="goes through a link"):
            access()
    assert sorted(path.name for path in outside.iterdir()) == ["secret.csv"]
    assert (outside / "secret.csv").read_text() == "a\n42\n"


def test_a_volume_whose_location_is_a_link_keeps_to_its_resolved_folder(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.csv").write_text("a\n")
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    store = LocalStore(tmp_path / "alias")
    assert store.root == real.resolve()
    assert [info.relative_path for info in store.list()] == ["a.csv"]


class _LyingS3:
    """An S3 endpoint of the SQL's choosing, answering an ETag that reads as a path."""

    def head_object(self, Bucket: str, Key: str) -> dict[str, str]:
        return {"ETag": '"../../../../escaped"'}

    def download_file(self, bucket: str, key: str, path: str) -> None:
        Path(path).write_text("x")


def test_an_objects_local_copy_stays_in_the_cache_whatever_the_server_says(tmp_path):
    cache = tmp_path / "cache"
    store = S3Store(_LyingS3(), "bucket", "data/", cache)
    copy = store.local_path("a.csv")
    assert copy.resolve().is_relative_to(cache.resolve())
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("location", ["s3://bucket/a/../b/", "s3://../data/", "oss://.x/data/"])
def test_a_bucket_location_has_no_dot_dot_and_a_plain_bucket_name(location):
    with pytest.raises(LakeError, match="no bucket has"):
        split_location(location)


# End to end, on Spark


def test_a_volume_query_and_copy_keep_out_of_links(lake, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("42\n")
    volume = local_volume(lake, tmp_path / "volume")
    (volume / "inside.csv").write_text("1\n")
    (volume / "leak.csv").symlink_to(outside / "secret.csv")
    (volume / "out").symlink_to(outside, target_is_directory=True)
    (result,) = lake.sql("SELECT f0 FROM VOLUME v USING CSV")
    assert [tuple(row) for row in result.rows] == [("1",)]
    lake.sql("CREATE TABLE t (a INT); INSERT INTO t VALUES (7)")
    with pytest.raises(LakeError, match="goes through a link"):
        lake.sql("COPY INTO VOLUME v SUBDIRECTORY 'out/' FROM TABLE t FILE_FORMAT = (TYPE = CSV)")
    assert sorted(path.name for path in outside.iterdir()) == ["secret.csv"]
