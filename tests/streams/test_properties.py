"""Streams equal their oracles on random INSERT/UPDATE/DELETE/MERGE histories with random
consumption points: STANDARD is the net difference of two snapshots by row identity, the consumer
MERGE (a clause per change type) keeps a replica equal to its source, APPEND_ONLY is the rows
inserted."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import history
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from tests.histories_settings import HISTORIES

SETTINGS = HISTORIES  # see tests/histories_settings.py
COLUMNS = "id, v, tag"
ROW = st.tuples(st.integers(0, 15), st.integers(0, 9), st.sampled_from(["a", "b", "c"]))
OPERATION = st.one_of(
    st.lists(ROW, min_size=1, max_size=4).map(lambda rows: ("insert", rows)),
    st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(1, 3)).map(
        lambda t: ("update", t)
    ),
    st.tuples(st.integers(0, 15), st.integers(0, 15)).map(lambda t: ("delete", t)),
    st.lists(ROW, min_size=1, max_size=4, unique_by=lambda row: row[0]).map(
        lambda rows: ("merge", rows)
    ),
)
# A step: a few statements on the source, then whether a consumer consumes the stream.
HISTORY = st.lists(
    st.tuples(st.lists(OPERATION, min_size=2, max_size=3), st.booleans()), min_size=1, max_size=3
)
INITIAL = st.lists(ROW, min_size=2, max_size=4)
# Always checked as well: insert then delete, many updates, MERGE's three actions, updates of
# consumed rows, delete all.
EXAMPLE = (
    [(0, 1, "a"), (1, 2, "b"), (2, 3, "c")],
    [
        (
            [("insert", [(5, 1, "a"), (6, 2, "b")]), ("update", (0, 5, 2)), ("delete", (6, 6))],
            False,
        ),
        ([("merge", [(0, 0, "x"), (1, 7, "y"), (9, 4, "z")]), ("update", (1, 9, 1))], True),
        ([("update", (2, 1, 1)), ("merge", [(9, 3, "q")]), ("insert", [(12, 1, "c")])], True),
        ([("delete", (0, 15))], False),
    ],
)

Row = tuple[int, int, str]
Step = tuple[list[tuple], bool]


def values(rows: list[Row]) -> str:
    return ", ".join(f"({i}, {v}, '{tag}')" for i, v, tag in rows)


@dataclass
class Source:
    """Table t, the statements that change it, and a model of its ids and inserted rows."""

    lake: LakeSession
    # Ids never come back, as a primary key whose deleted values are not reused: the consumer MERGE
    # keys on id, so a delete and a re-insert of one id in one range (two row ids) would meet one
    # replica row.
    unique: bool
    present: set[int] = field(default_factory=set)
    used: set[int] = field(default_factory=set)
    inserted: list[tuple[int, Row]] = field(default_factory=list)

    def apply(self, operation: tuple) -> None:
        kind, detail = operation
        if kind == "insert":
            self.insert(detail)
        elif kind == "update":
            low, high, step = detail
            low, high = sorted((low, high))
            self.lake.sql(f"UPDATE t SET v = v + {step} WHERE id BETWEEN {low} AND {high}")
        elif kind == "delete":
            low, high = sorted(detail)
            self.lake.sql(f"DELETE FROM t WHERE id BETWEEN {low} AND {high}")
            self.present -= set(range(low, high + 1))
        else:
            self.merge(detail)

    def insert(self, rows: list[Row]) -> None:
        if self.unique:
            rows = list({row[0]: row for row in rows if row[0] not in self.used}.values())
        if rows:
            self.lake.sql(f"INSERT INTO t VALUES {values(rows)}")
        self.inserted_now(rows)

    def merge(self, rows: list[Row]) -> None:
        """Source rows with v = 0 delete their matches, others update them or are inserted."""
        if self.unique:
            rows = [row for row in rows if row[0] in self.present or row[0] not in self.used]
        if not rows:
            return
        source = " UNION ALL ".join(
            f"SELECT {i} AS id, {v} AS v, '{tag}' AS tag" for i, v, tag in rows
        )
        self.lake.sql(
            f"MERGE INTO t USING ({source}) m ON t.id = m.id "
            "WHEN MATCHED AND m.v = 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET v = m.v, tag = m.tag "
            "WHEN NOT MATCHED THEN INSERT (id, v, tag) VALUES (m.id, m.v, m.tag)"
        )
        matched = {row[0] for row in rows} & self.present
        self.present -= {i for i, v, _ in rows if i in matched and v == 0}
        self.inserted_now([row for row in rows if row[0] not in matched])

    def inserted_now(self, rows: list[Row]) -> None:
        """Record the rows the statement just committed inserted."""
        if not rows:
            return
        version = latest(self.lake, "t")
        self.inserted.extend((version, row) for row in rows)
        self.present |= {row[0] for row in rows}
        self.used |= {row[0] for row in rows}


def latest(lake: LakeSession, table: str) -> int:
    (result,) = lake.sql(f"DESC HISTORY {table}")
    return max(row[0] for row in result.rows)


def offset(lake: LakeSession) -> int:
    (result,) = lake.sql("DESC STREAM s")
    return dict(result.rows)["offset_version"]


def rows(lake: LakeSession, sql: str) -> Counter:
    (result,) = lake.sql(sql)
    return Counter(tuple(row) for row in result.rows)


def both(lake: LakeSession, first: str, second: str) -> tuple[Counter, Counter]:
    """The rows of two tables, read by one statement."""
    (result,) = lake.sql(
        f"SELECT TRUE AS first, {COLUMNS} FROM {first} "
        f"UNION ALL SELECT FALSE AS first, {COLUMNS} FROM {second}"
    )
    found: dict[bool, Counter] = {True: Counter(), False: Counter()}
    for is_first, *row in result.rows:
        found[is_first][tuple(row)] += 1
    return found[True], found[False]


def stream(lake: LakeSession) -> Counter:
    """The stream's rows as (change type, commit version, id, v, tag)."""
    (result,) = lake.sql(f"SELECT __change_type, __commit_version, {COLUMNS} FROM s")
    return Counter(tuple(row) for row in result.rows)


@contextmanager
def lakehouse(spark: SparkSession, initial: list[Row], unique: bool) -> Iterator[Source]:
    """A fresh lakehouse with table t (id INT, v INT, tag STRING) holding `initial`."""
    with tempfile.TemporaryDirectory() as home:
        config = LakeSettings(lake_home=Path(home))
        lake = LakeSession(Catalog(config.catalog_path), config, lambda: spark)
        lake.sql("CREATE TABLE t (id INT, v INT, tag STRING)")
        source = Source(lake, unique)
        source.insert(initial)
        yield source


def backfilled(location: str) -> int | None:
    """The version of the row tracking backfill that creating the stream committed, if any."""
    versions = [
        c.version for c in history(None, location) if c.operation == "ROW TRACKING BACKFILL"
    ]
    return max(versions, default=None)


def snapshots(
    spark: SparkSession, location: str, versions: tuple[int, int], initial: int
) -> tuple[dict[int, tuple], dict[int, tuple]]:
    """Row id → (row commit version, id, v, tag) at each of the two versions, straight from Delta
    (one query); the rows that the stream's row tracking backfill stamped with its own version
    were written by `initial`, the one commit before it that wrote rows."""
    query = " UNION ALL ".join(
        f"SELECT {at} AS at, _metadata.row_id AS row_id, _metadata.row_commit_version AS written, "
        f"{COLUMNS} FROM delta.`{location}` VERSION AS OF {version}"
        for at, version in enumerate(versions)
    )
    backfill = backfilled(location)
    found: tuple[dict[int, tuple], dict[int, tuple]] = ({}, {})
    for row in spark.sql(query).collect():
        written = initial if row["written"] == backfill else row["written"]
        found[row["at"]][row["row_id"]] = (written, *row[3:])
    return found


def net_difference(
    spark: SparkSession, location: str, start: int, end: int, initial: int
) -> Counter:
    """The snapshots at `start` and `end` joined by row id (full outer join)."""
    # Only at the end → INSERT; only at the start → DELETE; at both but written again →
    # UPDATE_BEFORE (the values at the start) and UPDATE_AFTER (the values at the end).
    before, after = snapshots(spark, location, (start, end), initial)
    expected: Counter = Counter()
    for row_id in before.keys() | after.keys():
        old, new = before.get(row_id), after.get(row_id)
        if old is None:
            expected[("INSERT", *new)] += 1
        elif new is None:
            expected[("DELETE", *old)] += 1
        elif old[0] != new[0]:
            expected[("UPDATE_BEFORE", *old)] += 1
            expected[("UPDATE_AFTER", *new)] += 1
    return expected


@SETTINGS
@given(initial=INITIAL, history=HISTORY)
@example(initial=EXAMPLE[0], history=EXAMPLE[1])
def test_standard_is_the_net_difference_of_the_snapshots_by_row_id(
    spark: SparkSession, initial: list[Row], history: list[Step]
) -> None:
    with lakehouse(spark, initial, unique=False) as source:
        lake = source.lake
        written = latest(lake, "t")
        lake.sql("CREATE TABLE STREAM s ON TABLE t; CREATE TABLE sink (id INT, v INT, tag STRING)")
        location = lake.catalog.relation("t").location
        for operations, consume in history:
            for operation in operations:
                source.apply(operation)
            start, end = offset(lake), latest(lake, "t")
            expected = net_difference(spark, location, start, end, written)
            assert stream(lake) == expected, (start, end)
            if consume:
                lake.sql(f"INSERT INTO sink SELECT {COLUMNS} FROM s")
                assert offset(lake) == end
                assert stream(lake) == Counter()


CONSUMER_MERGE = (
    "MERGE INTO replica target USING s source_stream ON target.id = source_stream.id "
    "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' THEN update set "
    "target.id = source_stream.id, target.v = source_stream.v, target.tag = source_stream.tag "
    "WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
    "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' THEN INSERT VALUES "
    "(source_stream.id, source_stream.v, source_stream.tag)"
)


@SETTINGS
@given(initial=INITIAL, history=HISTORY)
@example(initial=EXAMPLE[0], history=EXAMPLE[1])
def test_the_consumer_merge_keeps_a_replica_equal_to_its_source(
    spark: SparkSession, initial: list[Row], history: list[Step]
) -> None:
    with lakehouse(spark, initial, unique=True) as source:
        lake = source.lake
        lake.sql(
            "CREATE TABLE replica (id INT, v INT, tag STRING); "
            "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE')"
        )
        consumptions = [consume for _, consume in history[:-1]] + [True]
        for (operations, _), consume in zip(history, consumptions, strict=True):
            for operation in operations:
                source.apply(operation)
            if consume:
                end = latest(lake, "t")
                lake.sql(CONSUMER_MERGE)
                assert offset(lake) == end
                replica, source_rows = both(lake, "replica", "t")
                assert replica == source_rows


def cdf_inserts(spark: SparkSession, location: str, start: int, end: int) -> Counter:
    """The change data feed's 'insert' rows after `start` up to `end`, straight from Delta."""
    if start >= end:
        return Counter()
    frame = spark.sql(
        f"SELECT 'INSERT', _commit_version, {COLUMNS} "
        f"FROM table_changes_by_path('{location}', {start + 1}, {end}) "
        "WHERE _change_type = 'insert'"
    )
    return Counter(tuple(row) for row in frame.collect())


@SETTINGS
@given(initial=INITIAL, history=HISTORY)
@example(initial=EXAMPLE[0], history=EXAMPLE[1])
def test_append_only_is_the_rows_inserted(
    spark: SparkSession, initial: list[Row], history: list[Step]
) -> None:
    with lakehouse(spark, initial, unique=False) as source:
        lake = source.lake
        lake.sql(
            "CREATE TABLE STREAM s ON TABLE t "
            "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY'); "
            "CREATE TABLE sink (id INT, v INT, tag STRING)"
        )
        created = offset(lake)
        location = lake.catalog.relation("t").location
        for operations, consume in history:
            for operation in operations:
                source.apply(operation)
            start, end = offset(lake), latest(lake, "t")
            inserted = Counter(
                ("INSERT", version, *row)
                for version, row in source.inserted
                if start < version <= end
            )
            assert stream(lake) == inserted == cdf_inserts(spark, location, start, end)
            if consume:
                lake.sql(f"INSERT INTO sink SELECT {COLUMNS} FROM s")
                assert offset(lake) == end
        # Consumed once each, none lost: the sink holds every row inserted since the stream began.
        consumed = offset(lake)
        assert rows(lake, f"SELECT {COLUMNS} FROM sink") == Counter(
            row for version, row in source.inserted if created < version <= consumed
        )
