"""Random histories of inserts, updates and deletes on two source tables, and the check that
after every refresh each dynamic table holds exactly what its query gives when run from scratch:
what the property tests (test_properties*.py) share."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.session import LakeSession
from tests.histories_settings import HISTORIES

SETTINGS = HISTORIES  # see tests/histories_settings.py
TABLES = """
CREATE TABLE src (id BIGINT, cat STRING, amount DECIMAL(10,2), qty INT, name STRING);
CREATE TABLE dim (cat STRING, label STRING, weight INT);
"""
CATEGORIES = st.sampled_from([None, "a", "b", "c"])
AMOUNTS = st.sampled_from(
    [None, Decimal("-1.50"), Decimal("0.00"), Decimal("2.25"), Decimal("10.10")]
)
QUANTITIES = st.sampled_from([None, 0, 1, 5])
NAMES = st.sampled_from([None, "x", "y"])
SRC_ROW = st.tuples(CATEGORIES, AMOUNTS, QUANTITIES, NAMES)
DIM_ROW = st.tuples(CATEGORIES, st.sampled_from(["L1", "L2", None]), st.sampled_from([1, 2, None]))


def literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return f"'{value}'"
    return str(value)


def values(rows: list[tuple]) -> str:
    return ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)


# One change to the sources: a DML statement built from drawn values.
SRC_CHANGE = st.one_of(
    st.lists(SRC_ROW, min_size=1, max_size=3).map(lambda rows: ("insert", rows)),
    st.tuples(st.integers(0, 2), AMOUNTS, QUANTITIES).map(lambda t: ("update", t)),
    st.tuples(st.integers(0, 2), CATEGORIES).map(lambda t: ("delete", t)),
)
DIM_CHANGE = st.one_of(
    st.lists(DIM_ROW, min_size=1, max_size=2).map(lambda rows: ("dim_insert", rows)),
    st.tuples(CATEGORIES, st.sampled_from([1, 2, 3])).map(lambda t: ("dim_update", t)),
    CATEGORIES.map(lambda c: ("dim_delete", c)),
)
# OPTIMIZE rewrites a clustered table's files and changes no row.
OPTIMIZE = st.sampled_from(["src", "dim"]).map(lambda table: ("optimize", table))


class Sources:
    """The two source tables and the DML that changes them; ids keep rising."""

    def __init__(self, lake: LakeSession) -> None:
        self.lake = lake
        self.next_id = 0
        lake.sql(TABLES)

    def insert(self, rows: list[tuple]) -> None:
        numbered = [(self.next_id + i, *row) for i, row in enumerate(rows)]
        self.next_id += len(rows)
        self.lake.sql(f"INSERT INTO src VALUES {values(numbered)}")

    def apply(self, change: tuple) -> None:
        kind, detail = change
        if kind == "insert":
            self.insert(detail)
        elif kind == "update":
            k, amount, qty = detail
            assignments = f"amount = {literal(amount)}, qty = {literal(qty)}"
            self.lake.sql(f"UPDATE src SET {assignments} WHERE id % 3 = {k}")
        elif kind == "delete":
            k, cat = detail
            self.lake.sql(f"DELETE FROM src WHERE id % 3 = {k} AND cat <=> {literal(cat)}")
        elif kind == "dim_insert":
            self.lake.sql(f"INSERT INTO dim VALUES {values(detail)}")
        elif kind == "optimize":
            self.lake.sql(f"OPTIMIZE {detail} FULL")
        elif kind == "dim_update":
            cat, weight = detail
            self.lake.sql(f"UPDATE dim SET weight = {weight} WHERE cat <=> {literal(cat)}")
        else:
            self.lake.sql(f"DELETE FROM dim WHERE cat <=> {literal(detail)}")


def held_and_full(lake: LakeSession, queries: dict[str, str]) -> dict[str, tuple[Counter, Counter]]:
    """Each dynamic table's rows and its query's, run in full: one statement reads them all
    (rows as JSON, so that tables of different columns share it)."""
    parts = [
        f"SELECT '{name}' AS dt, {held} AS held, to_json(struct(*)) AS row FROM {relation}"
        for name, query in queries.items()
        for held, relation in ((True, name), (False, f"({query}) q"))
    ]
    (result,) = lake.sql(" UNION ALL ".join(parts))
    found = {name: (Counter(), Counter()) for name in queries}
    for name, held, row in result.rows:
        found[name][0 if held else 1][row] += 1
    return found


def check_history(
    spark: SparkSession,
    queries: dict[str, str],
    initial: tuple[list[tuple], list[tuple]],
    steps: list[list[tuple]],
    layout: str = "",
    dropping: Mapping[str, str] | None = None,
) -> None:
    """Create the dynamic tables (in order), then after each step's changes refresh them all
    and compare each with its query run in full. `layout`: statements run after the sources'
    first rows (ALTER TABLE … CLUSTER BY); `dropping`: by table, the condition of a DROP ROW
    expectation it is declared with (its rows are the query's that pass it)."""
    dropping = dropping or {}
    with tempfile.TemporaryDirectory() as home:
        config = LakeSettings(lake_home=Path(home))
        lake = LakeSession(Catalog(config.catalog_path), config, lambda: spark)
        sources = Sources(lake)
        if initial[0]:
            sources.insert(initial[0])
        if initial[1]:
            lake.sql(f"INSERT INTO dim VALUES {values(initial[1])}")
        if layout:
            lake.sql(layout)
        for name, query in queries.items():
            condition = dropping.get(name)
            declared = f"(CONSTRAINT kept EXPECT ({condition}) ON VIOLATION DROP ROW)"
            declared = declared if condition else ""
            lake.sql(
                f"CREATE DYNAMIC TABLE {name} {declared} REFRESH_MODE = INCREMENTAL AS {query}"
            )
        expected = {
            name: f"SELECT * FROM ({query}) WHERE COALESCE({dropping[name]}, TRUE)"
            if name in dropping
            else query
            for name, query in queries.items()
        }
        for step in steps:
            for change in step:
                sources.apply(change)
            for name in queries:
                outcome = dynamic.refresh(spark, lake.catalog, name)
                assert outcome.mode in (RefreshMode.INCREMENTAL, RefreshMode.NO_DATA), outcome
            for name, (held, full) in held_and_full(lake, expected).items():
                assert held == full, (name, step)


INITIAL = st.tuples(st.lists(SRC_ROW, max_size=6), st.lists(DIM_ROW, max_size=3))
SRC_STEPS = st.lists(st.lists(SRC_CHANGE, min_size=1, max_size=3), min_size=1, max_size=2)
BOTH_STEPS = st.lists(
    st.lists(st.one_of(SRC_CHANGE, DIM_CHANGE), min_size=1, max_size=3), min_size=1, max_size=2
)
CLUSTERED_STEPS = st.lists(
    st.lists(st.one_of(SRC_CHANGE, DIM_CHANGE, OPTIMIZE), min_size=1, max_size=3),
    min_size=1,
    max_size=2,
)

# Always checked as well: a group emptying, NULL keys and values, updates, and (with the second
# table) changes on both sides of a join in one refresh.
SRC_EXAMPLE = (
    (
        [
            ("a", Decimal("2.25"), 1, "x"),
            ("a", None, 5, None),
            (None, Decimal("10.10"), 0, "y"),
            ("b", Decimal("-1.50"), None, "x"),
        ],
        [("a", "L1", 1), ("b", "L2", 2), (None, "L1", 1)],
    ),
    [
        [("delete", (0, "a")), ("delete", (1, "a")), ("update", (2, Decimal("0.00"), 5))],
        [("insert", [(None, None, None, None), ("c", Decimal("2.25"), 1, "x")])],
    ],
)
BOTH_EXAMPLE = (
    SRC_EXAMPLE[0],
    [
        [("dim_update", ("a", 3)), ("delete", (0, "a")), ("insert", [("b", None, 1, "y")])],
        [("dim_delete", "b"), ("dim_insert", [("c", "L2", 2)]), ("update", (1, None, 0))],
    ],
)
