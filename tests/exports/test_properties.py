"""Incremental equals full: on random INSERT / UPDATE / DELETE / MERGE histories of a keyed table,
split into consecutive ranges at random points between commits, each range's records replayed in
sequence order onto the table's rows at the range's start give its rows at the range's end
(`VERSION AS OF`), and the ranges' records together are those of one export of the whole
history. Rows whose non-key columns are all NULL have no column versions and so no records (the
documented limit): both sides leave them out."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lake_assets.core.delta import history
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.histories_settings import HISTORIES

# Each example costs ~15 Spark statements: 6 examples (one of them the fixed one below) keep the
# file at about two minutes on two cores (CI runs the fixed one: see tests/histories_settings.py).
SETTINGS = settings(HISTORIES, max_examples=6)
KEYS = 8
A = st.one_of(st.none(), st.integers(0, 3))
B = st.one_of(st.none(), st.sampled_from(["x", "y", "z"]))
ROW = st.tuples(st.integers(0, KEYS - 1), A, B)
KEEP = "keep"  # an UPDATE that leaves the column be
OPERATION = st.one_of(
    st.lists(ROW, min_size=1, max_size=4, unique_by=lambda row: row[0]).map(
        lambda rows: ("insert", rows)
    ),
    st.tuples(
        st.integers(0, KEYS - 1),
        st.integers(0, KEYS - 1),
        st.one_of(st.just(KEEP), A),
        st.one_of(st.just(KEEP), B),
    ).map(lambda update: ("update", update)),
    st.tuples(st.integers(0, KEYS - 1), st.integers(0, KEYS - 1)).map(
        lambda bounds: ("delete", bounds)
    ),
    st.lists(
        st.tuples(st.integers(0, KEYS - 1), A, B, st.booleans()),
        min_size=1,
        max_size=4,
        unique_by=lambda row: row[0],
    ).map(lambda rows: ("merge", rows)),
)
HISTORY = st.lists(OPERATION, min_size=2, max_size=6)
# Whether to end a range before each commit (the first flags are used, as many as commits).
SPLITS = st.lists(st.booleans(), min_size=16, max_size=16)
# Always checked: inserts with NULLs, columns set to NULL and to values, a row whose columns all
# become NULL, a delete and the key inserted again, MERGE's three actions.
EXAMPLE = (
    [
        ("insert", [(0, 1, "x"), (1, None, "y"), (2, 2, None), (3, None, None)]),
        ("update", (0, 1, None, "z")),
        ("update", (2, 2, KEEP, None)),
        ("delete", (1, 1)),
        ("insert", [(1, 3, "x")]),
        (
            "merge",
            [(0, 2, "y", False), (1, 0, None, True), (3, 1, None, False), (5, 0, "z", False)],
        ),
    ],
    [False, True, False, True, True, False, True] + [False] * 9,
)

State = dict[int, dict[str, str]]


def literal(value: int | str | None) -> str:
    if value is None:
        return "NULL"
    return str(value) if isinstance(value, int) else f"'{value}'"


@dataclass
class Source:
    """A keyed table t<n> (k, a INT, b STRING), and which of its keys are there now (so that
    INSERT and MERGE keep the key unique)."""

    lake: LakeSession
    name: str
    present: set[int] = field(default_factory=set)

    def apply(self, operation: tuple) -> None:
        kind, detail = operation
        if kind == "insert":
            rows = [row for row in detail if row[0] not in self.present]
            if rows:
                values = ", ".join(f"({k}, {literal(a)}, {literal(b)})" for k, a, b in rows)
                self.lake.sql(f"INSERT INTO {self.name} VALUES {values}")
                self.present |= {row[0] for row in rows}
        elif kind == "update":
            low, high, a, b = detail
            low, high = sorted((low, high))
            sets = [f"{c} = {literal(v)}" for c, v in (("a", a), ("b", b)) if v != KEEP]
            if sets:
                self.lake.sql(
                    f"UPDATE {self.name} SET {', '.join(sets)} WHERE k BETWEEN {low} AND {high}"
                )
        elif kind == "delete":
            low, high = sorted(detail)
            self.lake.sql(f"DELETE FROM {self.name} WHERE k BETWEEN {low} AND {high}")
            self.present -= set(range(low, high + 1))
        else:
            self.merge(detail)

    def merge(self, rows: list[tuple]) -> None:
        """Rows flagged delete delete their match, others update it or are inserted."""
        source = " UNION ALL ".join(
            f"SELECT {k} AS k, CAST({literal(a)} AS INT) AS a, CAST({literal(b)} AS STRING) AS b, "
            f"{str(gone).upper()} AS gone"
            for k, a, b, gone in rows
        )
        self.lake.sql(
            f"MERGE INTO {self.name} USING ({source}) m ON {self.name}.k = m.k "
            "WHEN MATCHED AND m.gone THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET a = m.a, b = m.b "
            "WHEN NOT MATCHED AND NOT m.gone THEN INSERT (k, a, b) VALUES (m.k, m.a, m.b)"
        )
        for k, _, _, gone in rows:
            if gone:
                self.present.discard(k)
            else:
                self.present.add(k)


def millis_of(lake: LakeSession, table: str) -> dict[int, int]:
    """The table's versions and their commit times in ms."""
    location = lake.catalog.get(TableEntry, table).location
    return {
        commit.version: int(commit.timestamp.replace(tzinfo=UTC).timestamp() * 1000)
        for commit in history(None, location)
    }


def snapshots(spark: SparkSession, location: str, versions: set[int]) -> dict[int, State]:
    """The rows at each version (straight from Delta), as key → its non-NULL non-key columns;
    rows with none are left out."""
    query = " UNION ALL ".join(
        f"SELECT {v} AS at, k, a, b FROM delta.`{location}` VERSION AS OF {v}"
        for v in sorted(versions)
    )
    found: dict[int, State] = {v: {} for v in versions}
    for row in spark.sql(query).collect():
        columns = {c: str(row[c]) for c in ("a", "b") if row[c] is not None}
        if columns:
            found[row["at"]][row["k"]] = columns
    return found


def replayed(state: State, records: list[tuple]) -> State:
    """`records` (k, column_name, column_value, op_type, sequence_info) applied in sequence
    order: U sets a column, DA clears it, DR removes the row."""
    rows = {k: dict(columns) for k, columns in state.items()}
    for k, column, value, op, _ in sorted(records, key=lambda record: record[4]):
        if op == "U":
            rows.setdefault(k, {})[column] = value
        elif op == "DA":
            rows.get(k, {}).pop(column, None)
        else:
            assert op == "DR", op
            rows.pop(k, None)
    return {k: columns for k, columns in rows.items() if columns}


def exported(lake: LakeSession, name: str, start: int, end: int) -> dict:
    (result,) = lake.sql(
        f"EXPORT CHANGELOG {name} (START_TIMESTAMP_MILLIS => {start}, END_TIMESTAMP_MILLIS => "
        f"{end})"
    )
    (row,) = result.rows
    return dict(zip(result.columns, row, strict=True))


_counter = itertools.count()


@SETTINGS
@given(operations=HISTORY, splits=SPLITS)
@example(*EXAMPLE)
def test_incremental_equals_full(
    lake: LakeSession, spark: SparkSession, operations: list[tuple], splits: list[bool]
) -> None:
    n = next(_counter)
    t, r, full = f"t{n}", f"r{n}", f"full{n}"
    lake.sql(
        f"CREATE TABLE {t} (k INT, a INT, b STRING, PRIMARY KEY (k)); "
        f"ALTER TABLE {t} SET PROPERTIES ('change_tracking' = 'true'); "
        f"CREATE CHANGELOG EXPORT e{n} FROM TABLE {t} TO TABLE {r} EXPORT_SEQUENCE_INFO = TRUE; "
        f"CREATE CHANGELOG EXPORT f{n} FROM TABLE {t} TO TABLE {full} "
        "EXPORT_SEQUENCE_INFO = TRUE"
    )
    source = Source(lake, t)
    for operation in operations:
        source.apply(operation)
    times = millis_of(lake, t)
    newest = max(times)

    # Range ends at the commit times where a split was drawn (a range [s, e) holds the commits
    # at s and after, before e); the last range ends just after the newest commit.
    ends = sorted({times[v] for v in range(1, newest + 1) if splits[v - 1]} | {times[newest] + 1})
    ranges = list(zip([0, *ends[:-1]], ends, strict=True))
    before: dict[int, int | None] = {}
    for start, end in ranges:
        result = exported(lake, f"e{n}", start, end)
        assert result["complete"] is True
        before[end] = max((v for v, ms in times.items() if ms < end), default=None)

    location = lake.catalog.get(TableEntry, t).location
    states = snapshots(spark, location, {v for v in before.values() if v is not None})
    (result,) = lake.sql(
        f"SELECT k, column_name, column_value, op_type, sequence_info, version FROM {r}"
    )
    records = [tuple(row) for row in result.rows]
    assert not [record for record in records if record[3] not in ("U", "DA", "DR")]
    for start, end in ranges:
        at_start = before.get(start)
        state = states[at_start] if at_start is not None else {}
        in_range = [rec[:5] for rec in records if start <= rec[5] < end]
        expected = states[before[end]] if before[end] is not None else {}
        assert replayed(state, in_range) == expected, (start, end)

    # Each range after the first started where the one before it left off.
    (status,) = lake.sql(
        f"SELECT range_start, first_version, last_version FROM lake_changelog_status "
        f"WHERE export = 'e{n}' ORDER BY range_start"
    )
    runs = [tuple(row) for row in status.rows]
    assert [run[0] for run in runs] == [start for start, _ in ranges]
    for previous, current in itertools.pairwise(runs):
        assert current[1] == previous[2] + 1

    # The ranges' records together are one export's of the whole history.
    whole = exported(lake, f"f{n}", 0, times[newest] + 1)
    (result,) = lake.sql(
        f"SELECT k, column_name, column_value, op_type, sequence_info, version FROM {full}"
    )
    assert Counter(tuple(row) for row in result.rows) == Counter(records)
    assert whole["records"] == len(records)
    assert replayed({}, [rec[:5] for rec in records]) == states[before[times[newest] + 1]]
