"""Volume streams on real Spark, Delta and files: a file's arrival, replacement and removal as
change rows of the volume's directory table, consumed like a table stream's (new and replaced
images recognized by INSERT … SELECT), and a directory refresh that commits only when the
listing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.session import LakeSession
from lake_assets.volumes.entry import VolumeEntry
from tests.ingest_helpers import local_volume, put, rows

# Dish images recognized as they land, on a local directory instead of OSS with an event
# queue, and with file names standing in for what an AI function would see in each image.
RESULTS_TABLE = """CREATE TABLE IF NOT EXISTS dish_recognition_results (
    file_path VARCHAR COMMENT 'Relative path of the image',
    file_url VARCHAR COMMENT 'Full OSS URL of the image',
    file_size BIGINT COMMENT 'File size (bytes)',
    last_modified_time TIMESTAMP COMMENT 'File last modified time',
    recognized_content VARCHAR COMMENT 'AI recognition result',
    change_type VARCHAR COMMENT 'Trigger event type: INSERT/UPDATE_AFTER',
    commit_version BIGINT COMMENT 'Stream consumption version number',
    processed_at TIMESTAMP COMMENT 'Processing time'
)"""
VOLUME_STREAM = (
    "CREATE STREAM IF NOT EXISTS str_dish_images ON VOLUME vol_dish_images "
    "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')"
)
RECOGNIZE = "upper(regexp_extract(relative_path, '([^/]+)[.][a-z]+$', 1))"
CONSUME = f"""INSERT INTO dish_recognition_results
SELECT relative_path AS file_path, url AS file_url, size AS file_size, last_modified_time,
    {RECOGNIZE} AS recognized_content,
    __change_type AS change_type, __commit_version AS commit_version,
    current_timestamp() AS processed_at
FROM str_dish_images
WHERE __change_type IN ('INSERT', 'UPDATE_AFTER') -- Only process new and replaced
AND (
    lower(relative_path) LIKE '%.jpg' OR lower(relative_path) LIKE '%.jpeg'
    OR lower(relative_path) LIKE '%.png' OR lower(relative_path) LIKE '%.webp'
)"""


def stream_rows(lake: LakeSession, stream: str) -> list[tuple]:
    """A volume stream's rows as (change type, relative path, size), sorted."""
    return sorted(
        rows(lake, f"SELECT __change_type, relative_path, size FROM {stream}"),
        key=lambda row: (row[1], row[0]),
    )


def directory_version(lake: LakeSession, volume: str) -> int:
    location = lake.catalog.get(VolumeEntry, volume).directory_location
    return max(int(path.stem) for path in Path(location, "_delta_log").glob("*.json"))


@pytest.fixture
def images(lake: LakeSession, tmp_path: Path) -> Path:
    """A volume of dish images (two images and a note), the results table and a volume stream."""
    directory = tmp_path / "dish-images"
    put(directory, "noodles.jpg", "jpg-1")
    put(directory, "lunch/dumplings.png", "png-1")
    put(directory, "notes.txt", "not an image")
    local_volume(lake, directory, "vol_dish_images", auto_refresh=False)
    lake.sql(f"{RESULTS_TABLE}; {VOLUME_STREAM}")
    return directory


def test_a_volume_stream_recognizes_new_and_replaced_images_once(
    lake: LakeSession, images: Path
) -> None:
    # The stream starts at the directory's latest version: the files there before are not news.
    assert stream_rows(lake, "str_dish_images") == []
    put(images, "tofu.webp", "webp-1")
    lake.sql("ALTER VOLUME vol_dish_images REFRESH")
    lake.sql(CONSUME)
    first = rows(
        lake, "SELECT file_path, recognized_content, change_type FROM dish_recognition_results"
    )
    assert first == [("tofu.webp", "TOFU", "INSERT")]
    assert stream_rows(lake, "str_dish_images") == []

    put(images, "noodles.jpg", "jpg-2, a better photo", seconds=5)  # replaced: new content
    (images / "lunch" / "dumplings.png").unlink()
    put(images, "lunch/rice.jpeg", "jpeg-1")
    put(images, "more-notes.txt", "still not an image")
    lake.sql("ALTER VOLUME vol_dish_images REFRESH")
    assert stream_rows(lake, "str_dish_images") == [
        ("DELETE", "lunch/dumplings.png", 5),
        ("INSERT", "lunch/rice.jpeg", 6),
        ("INSERT", "more-notes.txt", 18),
        ("UPDATE_AFTER", "noodles.jpg", 21),
        ("UPDATE_BEFORE", "noodles.jpg", 5),
    ]
    lake.sql(CONSUME)
    recognized = rows(
        lake,
        "SELECT file_path, recognized_content, change_type, file_size, file_url "
        "FROM dish_recognition_results ORDER BY file_path",
    )
    assert [row[:4] for row in recognized] == [
        ("lunch/rice.jpeg", "RICE", "INSERT", 6),
        ("noodles.jpg", "NOODLES", "UPDATE_AFTER", 21),
        ("tofu.webp", "TOFU", "INSERT", 6),
    ]
    assert recognized[1][4] == (images / "noodles.jpg").as_uri()
    versions = rows(lake, "SELECT DISTINCT commit_version FROM dish_recognition_results")
    assert len(versions) == 2
    assert stream_rows(lake, "str_dish_images") == []


def test_an_append_only_volume_stream_shows_arrivals_only(lake: LakeSession, images: Path) -> None:
    lake.sql(
        "CREATE STREAM arrivals ON VOLUME vol_dish_images "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')"
    )
    put(images, "noodles.jpg", "jpg-2, replaced", seconds=5)
    (images / "notes.txt").unlink()
    put(images, "tofu.webp", "webp-1")
    lake.sql("ALTER VOLUME vol_dish_images REFRESH")
    assert stream_rows(lake, "arrivals") == [("INSERT", "tofu.webp", 6)]
    (described,) = lake.sql("DESC STREAM arrivals")
    assert dict(described.rows)["source_kind"] == "VOLUME"


def test_a_refresh_of_an_unchanged_listing_commits_nothing(lake: LakeSession, images: Path) -> None:
    before = directory_version(lake, "vol_dish_images")
    (result,) = lake.sql("ALTER VOLUME vol_dish_images REFRESH")
    assert result.message == "volume vol_dish_images is up to date: 3 files"
    assert directory_version(lake, "vol_dish_images") == before
    put(images, "tofu.webp", "webp-1")
    (result,) = lake.sql("ALTER VOLUME vol_dish_images REFRESH")
    assert result.message == "refreshed volume vol_dish_images: 4 files"
    assert directory_version(lake, "vol_dish_images") == before + 1


def test_a_stream_marks_its_volume_tracked(lake: LakeSession, images: Path) -> None:
    assert lake.catalog.get(VolumeEntry, "vol_dish_images").change_tracking
    # APPEND_ONLY needs only the change feed, which a directory table has from birth.
    local_volume(lake, images, "vol_appended", auto_refresh=False)
    lake.sql(
        "CREATE STREAM arrivals ON VOLUME vol_appended "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')"
    )
    assert lake.catalog.get(VolumeEntry, "vol_appended").change_tracking


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("CREATE STREAM s ON VOLUME nowhere", "volume nowhere does not exist"),
        (
            "CREATE STREAM s ON VOLUME dish_recognition_results",
            "dish_recognition_results is a table",
        ),
        (
            "CREATE STREAM s ON TABLE vol_dish_images",
            "vol_dish_images is a volume — write ON VOLUME vol_dish_images",
        ),
        ("CREATE STREAM s ON VOLUME plain", "volume plain has no directory table"),
    ],
)
def test_bad_volume_streams_are_refused(
    lake: LakeSession, images: Path, tmp_path: Path, sql: str, what: str
) -> None:
    (tmp_path / "plain").mkdir()
    lake.sql(
        f"CREATE EXTERNAL VOLUME plain LOCATION '{(tmp_path / 'plain').as_uri()}/' "
        "USING CONNECTION c DIRECTORY = (ENABLE = FALSE)"
    )
    with pytest.raises(LakeError, match=what):
        lake.sql(sql)


def test_a_stream_on_a_dropped_volume_is_stale(lake: LakeSession, images: Path) -> None:
    lake.sql("DROP VOLUME vol_dish_images")
    with pytest.raises(LakeError, match="its source vol_dish_images was dropped"):
        lake.sql("SELECT * FROM str_dish_images")
