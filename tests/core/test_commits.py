"""Tagged, fenced commits on a real Delta table: records are found again by their tag among the
commits after a version, across the growing windows the history is read in."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core import commits
from lake_assets.core.commits import STATEMENT_MARKER, Fence
from lake_assets.core.delta import COMMIT_TAG_CONF, delta_ref
from lake_assets.dynamic_tables.refreshes import REFRESH_MARKER
from lake_assets.pipes.load_records import LOAD_MARKER


@pytest.fixture(scope="module")
def tagged(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list]:
    """A table of 70 tagged INSERTs (versions 1..70) after its CREATE (version 0)."""
    location = str(tmp_path_factory.mktemp("commits") / "t")
    spark.sql(f"CREATE TABLE {delta_ref(location)} (a INT) USING delta")
    records = []
    for number in range(70):
        record = commits.new_record(STATEMENT_MARKER, number=number)
        with commits.committing(spark, record):
            spark.sql(f"INSERT INTO {delta_ref(location)} VALUES ({number})")
        records.append(record)
    return location, records


def test_commits_since_a_version_are_newest_first(spark, tagged):
    location, _ = tagged
    assert [c.version for c in commits.commits_since(spark, location, 65)] == [70, 69, 68, 67, 66]
    assert len(commits.commits_since(spark, location, 0)) == 70
    assert [c.version for c in commits.commits_since(spark, location, 70)] == [70]


def test_a_record_is_found_only_after_the_version_its_writer_read(spark, tagged):
    location, records = tagged
    assert commits.find(spark, location, records[3], after=3).version == 4
    assert commits.find(spark, location, records[3], after=4) is None
    assert commits.find(spark, location, records[0], after=0).version == 1  # past two windows


def test_the_newest_record_of_a_kind(spark, tagged):
    location, _ = tagged
    commit, record = commits.newest(spark, location, STATEMENT_MARKER)
    assert (commit.version, record["number"]) == (70, 69)
    assert commits.newest(spark, location, LOAD_MARKER) is None


def test_a_fenced_write_is_skipped_when_another_writer_committed_since(spark, tmp_path: Path):
    location = str(tmp_path / "fenced")
    spark.sql(f"CREATE TABLE {delta_ref(location)} (a INT) USING delta")
    fence = Fence("writer", version=0, number=1)
    first, second = (commits.new_record(LOAD_MARKER, n=n) for n in (1, 2))
    for record in (first, second):  # both read version 0
        frame = spark.createDataFrame([(record["n"],)], "a INT")
        frame.write.format("delta").mode("append").options(
            **commits.writer_options(record, fence)
        ).save(location)
    assert commits.find(spark, location, first, after=0).version == 1
    assert commits.find(spark, location, second, after=0) is None
    assert spark.read.format("delta").load(location).count() == 1


def test_records_of_another_kind_or_none_are_not_decoded():
    record = commits.new_record(REFRESH_MARKER, start="x")
    assert commits.decode(commits.writer_options(record)["userMetadata"], LOAD_MARKER) is None
    assert commits.decode(None, LOAD_MARKER) is None
    assert commits.decode('{"lake_refresh": 1, "id": "old"}', REFRESH_MARKER)["tag"] == "old"


def test_a_fence_follows_the_newest_record_at_or_before_the_version_read(spark, tmp_path: Path):
    """Commits of other kinds between two writers' reads leave their fence the same; a record
    from before numbers were recorded counts as its version."""
    location = str(tmp_path / "numbered")
    spark.sql(f"CREATE TABLE {delta_ref(location)} (a INT) USING delta")
    assert commits.fence_at(spark, location, "w", LOAD_MARKER, 0) == (Fence("w", 0, 0), None)
    older = commits.new_record(LOAD_MARKER, n=1)
    spark.createDataFrame([(1,)], "a INT").write.format("delta").mode("append").option(
        "userMetadata", json.dumps(older)
    ).save(location)  # version 1, as loads committed before numbers
    spark.sql(f"INSERT INTO {delta_ref(location)} VALUES (2)")  # version 2, no record
    fence, (commit, record) = commits.fence_at(spark, location, "w", LOAD_MARKER, 2)
    assert (fence, commit.version, record["tag"]) == (Fence("w", 2, 2), 1, older["tag"])
    numbered = commits.new_record(LOAD_MARKER, n=3)
    spark.createDataFrame([(3,)], "a INT").write.format("delta").mode("append").options(
        **commits.writer_options(numbered, fence)
    ).save(location)  # version 3, number 2
    spark.sql(f"INSERT INTO {delta_ref(location)} VALUES (4)")  # version 4
    assert commits.fence_at(spark, location, "w", LOAD_MARKER, 4)[0] == Fence("w", 4, 3)
    assert commits.fence_at(spark, location, "w", LOAD_MARKER, 2)[0] == fence


def test_two_threads_sharing_a_session_each_commit_with_their_own_record(spark, tmp_path: Path):
    """The second thread asks to commit while the first is inside its commit: it waits, so
    neither commit carries the other's record and no setting is left behind."""
    locations = [str(tmp_path / name) for name in ("first", "second")]
    for location in locations:
        spark.sql(f"CREATE TABLE {delta_ref(location)} (a INT) USING delta")
    first, second = (commits.new_record(STATEMENT_MARKER, n=n) for n in (1, 2))
    inside, asking = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def commit_second() -> None:
        try:
            inside.wait()
            asking.set()
            with commits.committing(spark, second):
                spark.sql(f"INSERT INTO {delta_ref(locations[1])} VALUES (2)")
        except BaseException as error:
            failures.append(error)
            raise

    thread = threading.Thread(target=commit_second)
    thread.start()
    try:
        with commits.committing(spark, first):
            inside.set()
            asking.wait()
            spark.sql(f"INSERT INTO {delta_ref(locations[0])} VALUES (1)")
    finally:
        inside.set()
        thread.join()
    assert failures == []
    assert commits.find(spark, locations[0], first, after=0).version == 1
    assert commits.find(spark, locations[1], second, after=0).version == 1
    assert spark.conf.get(COMMIT_TAG_CONF, None) is None
