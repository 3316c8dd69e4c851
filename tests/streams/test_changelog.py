"""The direct reader (change files and new files only) returns exactly Delta's net changes, on
random histories and every range of them; ranges it cannot read go Delta's way."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lake_assets.core.delta import history
from lake_assets.session import LakeSession
from lake_assets.streams.changelog import RangeFiles, missing, range_files
from lake_assets.streams.entry import StreamEntry
from lake_assets.streams.reading import StreamRead, change_query
from tests.streams.test_properties import EXAMPLE, INITIAL, OPERATION, SETTINGS, Row, lakehouse

COLUMNS = ["id", "v", "tag"]
# Besides INSERT, UPDATE, DELETE and MERGE: OPTIMIZE (rewrites files, keeps row ids) and an INSERT
# OVERWRITE (removes files without change files: Delta's reader takes such a range).
EXTRA = st.sampled_from([("optimize", None), ("overwrite", None)])
STEPS = st.lists(st.lists(st.one_of(OPERATION, EXTRA), min_size=1, max_size=3), max_size=4)


def reads(
    spark: SparkSession, lake: LakeSession, start: int
) -> tuple[RangeFiles, Counter, Counter]:
    """The range after `start` to the latest version: its files, and the rows of stream s read
    directly and Delta's way."""
    ((files, direct, delta),) = every_read(spark, lake, [start]).values()
    return files, direct, delta


def every_read(
    spark: SparkSession, lake: LakeSession, starts: list[int]
) -> dict[int, tuple[RangeFiles, Counter, Counter]]:
    """`reads` for each start, the ranges' queries run together (one job per way of reading)."""
    if not starts:
        return {}
    entry = lake.catalog.get(StreamEntry, "s")
    commits = history(spark, entry.source_location)
    end = commits[0].version
    files: dict[int, RangeFiles] = {}
    for start in starts:
        found = range_files(spark, entry.source_location, start, end)
        assert found is not None
        files[start] = found

    def rows(direct: bool) -> dict[int, Counter]:
        query = " UNION ALL ".join(
            f"SELECT {start} AS range_start, * FROM ("
            + change_query(
                entry,
                StreamRead("s", entry.generation, start, end, initial=False),
                COLUMNS,
                commits,
                files[start] if direct else None,
            )
            + ")"
            for start in starts
        )
        found: dict[int, Counter] = {start: Counter() for start in starts}
        for row in spark.sql(query).collect():
            found[row[0]][tuple(row[1:])] += 1
        return found

    direct, delta = rows(direct=True), rows(direct=False)
    return {start: (files[start], direct[start], delta[start]) for start in starts}


def apply(spark: SparkSession, lake: LakeSession, source, operation: tuple) -> None:
    """One statement on t: INSERT, UPDATE, DELETE or MERGE through the session, the extras through
    Spark."""
    kind, _ = operation
    location = lake.catalog.relation("t").location
    if kind == "optimize":
        spark.sql(f"OPTIMIZE delta.`{location}`").collect()
    elif kind == "overwrite":
        spark.sql(
            f"INSERT OVERWRITE delta.`{location}` SELECT * FROM delta.`{location}` WHERE v % 2 = 0"
        )
    else:
        source.apply(operation)


@SETTINGS
@given(initial=INITIAL, steps=STEPS)
@example(initial=EXAMPLE[0], steps=[ops for ops, _ in EXAMPLE[1]])
@example(
    initial=EXAMPLE[0],
    steps=[[("update", (0, 1, 1))], [("optimize", None)], [("delete", (1, 1))]],
)
def test_direct_reads_equal_deltas_net_changes_on_every_range(
    spark: SparkSession, initial: list[Row], steps: list[list[tuple]]
) -> None:
    with lakehouse(spark, initial, unique=False) as source:
        lake = source.lake
        lake.sql("CREATE TABLE STREAM s ON TABLE t")
        first = lake.catalog.get(StreamEntry, "s").offset
        for operations in steps:
            for operation in operations:
                apply(spark, lake, source, operation)
            end = history(spark, lake.catalog.relation("t").location)[0].version
            for start, (files, direct, delta) in every_read(
                spark, lake, list(range(first, end))
            ).items():
                assert direct == delta, (start, end, files.direct)


def test_ranges_of_inserts_updates_and_deletes_are_read_directly(lake: LakeSession) -> None:
    spark = lake.spark
    lake.sql(
        "CREATE TABLE t (id INT, v INT, tag STRING); CREATE TABLE STREAM s ON TABLE t; "
        "INSERT INTO t VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'); "
        "UPDATE t SET v = 10 WHERE id = 1; DELETE FROM t WHERE id = 2"
    )
    start = lake.catalog.get(StreamEntry, "s").offset
    files, direct, delta = reads(spark, lake, start)
    assert files.direct
    assert len(files.inserted) >= 1
    assert len(files.changes) == 2
    assert direct == delta
    assert sorted((row[0], row[3], row[4]) for row in direct.elements()) == [
        ("INSERT", 1, 10),
        ("INSERT", 3, 3),
    ]


UPSERT = (
    "MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 9) m ON t.id = m.id "
    "WHEN MATCHED THEN UPDATE SET v = 5 "
    "WHEN NOT MATCHED THEN INSERT (id, v, tag) VALUES (m.id, 0, 'z')"
)
INSERT_ONLY_MERGE = (
    "MERGE INTO t USING (SELECT 9 AS id) m ON t.id = m.id "
    "WHEN NOT MATCHED THEN INSERT (id, v, tag) VALUES (m.id, 0, 'z')"
)


@pytest.mark.parametrize(
    ("statements", "direct"),
    [
        # A MERGE that updates and inserts writes its new rows to change files without row
        # ids: a later change to them could not be told apart, so that range goes Delta's way.
        (f"{UPSERT}; UPDATE t SET v = 1 WHERE id = 9", False),
        (f"UPDATE t SET v = 1 WHERE id = 1; {UPSERT}", True),
        # An insert-only MERGE adds files of new rows, like an INSERT.
        (f"{INSERT_ONLY_MERGE}; UPDATE t SET v = 1 WHERE id = 9", True),
        ("INSERT OVERWRITE t SELECT * FROM t WHERE id = 1", False),
    ],
)
def test_ranges_the_direct_reader_cannot_read_go_deltas_way(
    lake: LakeSession, statements: str, direct: bool
) -> None:
    lake.sql(
        "CREATE TABLE t (id INT, v INT, tag STRING); INSERT INTO t VALUES (1, 1, 'a'); "
        f"CREATE TABLE STREAM s ON TABLE t; {statements}"
    )
    files, rows, delta = reads(lake.spark, lake, lake.catalog.get(StreamEntry, "s").offset)
    assert files.direct is direct
    assert rows == delta


def test_a_range_with_a_metadata_change_goes_deltas_way(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (id INT, v INT, tag STRING); CREATE TABLE STREAM s ON TABLE t; "
        "INSERT INTO t VALUES (1, 1, 'a')"
    )
    location = lake.catalog.relation("t").location
    lake.spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('note' = 'x')")
    lake.sql("UPDATE t SET v = 2")
    files, rows, delta = reads(lake.spark, lake, lake.catalog.get(StreamEntry, "s").offset)
    assert files.direct is False
    assert rows == delta


def test_a_range_whose_files_were_vacuumed_names_them(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (id INT, v INT, tag STRING); INSERT INTO t VALUES (1, 1, 'a'); "
        "CREATE TABLE STREAM s ON TABLE t; UPDATE t SET v = 2"
    )
    entry = lake.catalog.get(StreamEntry, "s")
    files = range_files(lake.spark, entry.source_location, entry.offset, entry.offset + 1)
    assert files is not None
    assert files.direct
    assert missing(entry.source_location, files) == []
    change_file, _ = files.changes[0]
    (Path(entry.source_location) / change_file).unlink()
    assert missing(entry.source_location, files) == [change_file]
