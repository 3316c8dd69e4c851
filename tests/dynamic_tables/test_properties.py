"""Incremental equals full: random insert/update/delete histories on the sources, and after every
refresh the dynamic table holds exactly what its query gives when run from scratch."""

from __future__ import annotations

import tempfile
from collections import Counter
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.session import LakeSession

# How many examples each property draws comes from the profile (tests/conftest.py).
SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
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
) -> None:
    """Create the dynamic tables (in order), then after each step's changes refresh them all
    and compare each with its query run in full."""
    with tempfile.TemporaryDirectory() as home:
        config = LakeSettings(lake_home=Path(home))
        lake = LakeSession(Catalog(config.catalog_path), config, lambda: spark)
        sources = Sources(lake)
        if initial[0]:
            sources.insert(initial[0])
        if initial[1]:
            lake.sql(f"INSERT INTO dim VALUES {values(initial[1])}")
        for name, query in queries.items():
            lake.sql(f"CREATE DYNAMIC TABLE {name} REFRESH_MODE = INCREMENTAL AS {query}")
        for step in steps:
            for change in step:
                sources.apply(change)
            for name in queries:
                outcome = dynamic.refresh(spark, lake.catalog, name)
                assert outcome.mode in (RefreshMode.INCREMENTAL, RefreshMode.NO_DATA), outcome
            for name, (held, full) in held_and_full(lake, queries).items():
                assert held == full, (name, step)


INITIAL = st.tuples(st.lists(SRC_ROW, max_size=6), st.lists(DIM_ROW, max_size=3))
SRC_STEPS = st.lists(st.lists(SRC_CHANGE, min_size=1, max_size=3), min_size=1, max_size=2)
BOTH_STEPS = st.lists(
    st.lists(st.one_of(SRC_CHANGE, DIM_CHANGE), min_size=1, max_size=3), min_size=1, max_size=2
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


@SETTINGS
@given(initial=INITIAL, steps=SRC_STEPS)
@example(initial=SRC_EXAMPLE[0], steps=SRC_EXAMPLE[1])
def test_projection_filter_and_lateral_views_with_duplicate_rows(spark, initial, steps):
    """Row by row: a projection and filter; LATERAL VIEWs (OUTER: a NULL array gives one row),
    their rows aggregated, made DISTINCT and ranked."""
    exploded = "FROM src LATERAL VIEW OUTER explode(sequence(1, qty)) e AS i"
    check_history(
        spark,
        {
            "dt": "SELECT cat, name, amount * 2 AS doubled FROM src WHERE qty IS NULL OR qty > 0",
            "exploded": f"SELECT cat, i, amount {exploded} WHERE i IS NULL OR i > 0",
            "positions": "SELECT cat, p, v FROM src "
            "LATERAL VIEW posexplode(array(qty, qty * 2)) e AS p, v",
            "per_item": f"SELECT cat, i, COUNT(*) AS n, SUM(amount) AS s {exploded} "
            "GROUP BY cat, i",
            "distinct_items": f"SELECT DISTINCT i, name {exploded}",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_set_operations_over_two_tables(spark, initial, steps):
    """UNION ALL adds up its branches' changes; UNION, INTERSECT and EXCEPT, ALL or not, nested,
    under a top-N, and with NULLs and duplicate rows on both sides, recompute the rows a change
    touches."""
    check_history(
        spark,
        {
            "dt": "SELECT cat, amount FROM src WHERE qty > 0 "
            "UNION ALL SELECT cat, amount FROM src WHERE amount < 1 "
            "UNION ALL SELECT cat, CAST(weight AS DECIMAL(10,2)) AS amount FROM dim",
            "either": "SELECT cat, name FROM src WHERE qty > 0 UNION SELECT cat, label FROM dim",
            "both": "SELECT cat FROM src INTERSECT ALL SELECT cat FROM dim",
            "only": "SELECT cat, qty AS n FROM src EXCEPT ALL SELECT cat, weight FROM dim",
            "nested": "SELECT cat FROM src WHERE amount < 1 UNION ALL SELECT cat FROM dim "
            "EXCEPT SELECT s.cat FROM src s JOIN dim d ON s.cat = d.cat WHERE d.weight > 1 "
            "INTERSECT SELECT cat FROM src",
            "top": "SELECT cat, name FROM src UNION SELECT cat, label FROM dim "
            "ORDER BY name DESC NULLS LAST, cat NULLS FIRST LIMIT 2",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=SRC_STEPS)
@example(initial=SRC_EXAMPLE[0], steps=SRC_EXAMPLE[1])
def test_aggregates_with_and_without_group_by_null_keys_and_decimals(spark, initial, steps):
    """Without GROUP BY, the one row stays when every source row is gone (COUNT 0, NULLs);
    GROUPING SETS (one stage per set) tell a NULL key from a rolled-up one by GROUPING_ID(),
    and their grand total goes with the last row."""
    check_history(
        spark,
        {
            "dt": "SELECT cat, name, COUNT(*) AS n, COUNT(amount) AS na, "
            "COUNT(DISTINCT qty) AS dq, SUM(amount) AS s, AVG(amount) AS a, MIN(amount) AS mn, "
            "MAX(amount) AS mx, MAX(name) AS mxn, SUM(qty) AS sq, AVG(qty) AS aq, "
            "MIN(qty) AS mq, SUM(CAST(qty AS DOUBLE)) AS fq FROM src GROUP BY cat, name",
            "totals": "SELECT COUNT(*) AS n, COUNT(qty) AS nq, SUM(amount) AS s, "
            "AVG(amount) AS a, MIN(amount) AS lo, MAX(qty) AS hi FROM src WHERE cat IS NOT NULL",
            "ratios": "SELECT SUM(amount) / NULLIF(COUNT(*), 0) AS per_row, "
            "COUNT(DISTINCT cat) + MAX(qty) AS mixed FROM src",
            "sets": "SELECT cat, name, qty, SUM(amount) AS s, MAX(amount) AS m, COUNT(*) AS n, "
            "GROUPING_ID() AS g FROM src GROUP BY GROUPING SETS ((cat, name), qty, ())",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_inner_join_with_changes_on_both_sides(spark, initial, steps):
    check_history(
        spark,
        {
            "dt": "SELECT s.id, s.cat, d.label, s.amount * d.weight AS w "
            "FROM src s JOIN dim d ON s.cat = d.cat WHERE d.label IS NOT NULL"
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_aggregate_over_a_join(spark, initial, steps):
    """Grouped and not: a COUNT(*) alone reads no column of the rows it counts."""
    check_history(
        spark,
        {
            "dt": "SELECT d.label, COUNT(*) AS n, SUM(s.amount) AS total, MIN(s.qty) AS low "
            "FROM src s JOIN dim d ON s.cat = d.cat GROUP BY d.label",
            "shares": "SELECT d.label, 100.00 * SUM(CASE WHEN s.qty > 0 THEN s.amount ELSE 0 END) "
            "/ NULLIF(SUM(s.amount), 0) AS share, MAX(s.qty) - MIN(d.weight) AS spread "
            "FROM src s JOIN dim d ON s.cat = d.cat GROUP BY d.label",
            "pairs": "SELECT COUNT(*) AS n FROM src s JOIN dim d ON s.cat = d.cat",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=SRC_STEPS)
@example(initial=SRC_EXAMPLE[0], steps=SRC_EXAMPLE[1])
def test_dynamic_table_on_dynamic_tables(spark, initial, steps):
    check_history(
        spark,
        {
            "up": "SELECT id, cat, amount * 2 AS doubled FROM src WHERE qty IS NOT NULL",
            "summary": "SELECT cat, COUNT(*) AS n, SUM(amount) AS s, AVG(amount) AS a "
            "FROM src GROUP BY cat",
            "down": "SELECT cat, COUNT(*) AS n, SUM(doubled) AS total, MAX(doubled) AS top "
            "FROM up GROUP BY cat",
            "top": "SELECT cat, n, s FROM summary WHERE n > 1",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_keyed_queries_recompute_only_the_keys_a_change_touches(spark, initial, steps):
    """DISTINCT; HAVING and aggregates without state (BIT_OR, MAX_BY, COLLECT_SET) with the keys
    left out of the result; windows sharing a PARTITION BY and QUALIFY over a join (ties in the
    ORDER BY give equal rows, so the result does not depend on which comes first)."""
    check_history(
        spark,
        {
            "uniq": "SELECT DISTINCT cat, name FROM src",
            "grouped": "SELECT COUNT(*) AS n, BIT_OR(qty) AS bits, MAX_BY(name, id) AS last, "
            "ARRAY_JOIN(SORT_ARRAY(COLLECT_SET(qty)), ',') AS qs FROM src GROUP BY cat, name "
            "HAVING COUNT(*) > 1",
            "ranked": "SELECT s.id, s.cat, d.label, RANK() OVER (PARTITION BY s.cat "
            "ORDER BY s.amount) AS r FROM src s JOIN dim d ON s.cat = d.cat "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY d.cat, s.cat "
            "ORDER BY s.id DESC, d.label) <= 2",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_outer_joins_and_subqueries_recompute_the_join_keys_a_change_touches(spark, initial, steps):
    """A LEFT JOIN to a dimension with a condition on it; a FULL JOIN grouped by its join key
    (NULL keys on both sides meet in one group); IN and NOT EXISTS subqueries (semi and anti
    joins, a NULL category matching nothing); an IN nested in an IN on another column (a change
    to the inner subquery's rows touches the categories of the rows it lets through); a grouped
    derived table on the NULL-extended side of a LEFT JOIN (kept in a stage)."""
    check_history(
        spark,
        {
            "enriched": "SELECT s.id, s.cat, d.label, s.amount * d.weight AS w FROM src s "
            "LEFT JOIN dim d ON s.cat = d.cat AND d.label IS NOT NULL",
            "both": "SELECT COALESCE(s.cat, d.cat) AS cat, COUNT(s.id) AS n, "
            "COUNT(d.label) AS labels, SUM(s.qty) AS q FROM src s FULL JOIN dim d "
            "ON s.cat = d.cat GROUP BY COALESCE(s.cat, d.cat)",
            "chosen": "SELECT s.id, s.cat, s.amount FROM src s WHERE s.qty IS NOT NULL "
            "AND s.cat IN (SELECT d.cat FROM dim d WHERE d.weight > 1) "
            "AND NOT EXISTS (SELECT 1 FROM dim x WHERE x.cat = s.cat AND x.label IS NULL)",
            "nested": "SELECT d.cat, d.label FROM dim d WHERE d.cat IN (SELECT s.cat FROM src s "
            "WHERE s.name IN (SELECT s2.name FROM src s2 WHERE s2.qty > 1))",
            "counted": "SELECT s.id, c.n FROM src s LEFT JOIN (SELECT d.cat, COUNT(*) AS n "
            "FROM dim d GROUP BY d.cat) c ON s.cat = c.cat",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_correlated_subqueries_and_tables_joined_off_the_key(spark, initial, steps):
    """A scalar subquery correlated by the key (an aggregate of the row's own category); an
    EXISTS keyed by name over rows joined to a dimension by category (a dimension change reaches
    the names of the rows it joins); uncorrelated scalar subqueries beside an EXISTS keyed by
    category (rows that did not change cross the average as it moves); a correlated and an
    uncorrelated one in one condition (the uncorrelated one kept in a one-row stage)."""
    check_history(
        spark,
        {
            "above": "SELECT s.id, s.cat, s.amount FROM src s WHERE s.amount >= "
            "(SELECT AVG(s2.amount) FROM src s2 WHERE s2.cat = s.cat AND s2.id <> s.id)",
            "named": "SELECT s.id, d.label, d.weight FROM src s JOIN dim d ON s.cat = d.cat "
            "WHERE EXISTS (SELECT 1 FROM src s2 WHERE s2.name = s.name AND s2.qty > s.qty)",
            "over_average": "SELECT s.cat, COUNT(*) AS n, SUM(s.qty) AS q FROM src s "
            "WHERE s.amount > (SELECT AVG(s2.amount) FROM src s2) "
            "AND s.qty >= (SELECT MIN(d.weight) FROM dim d) "
            "AND EXISTS (SELECT 1 FROM dim d2 WHERE d2.cat = s.cat) GROUP BY s.cat",
            "mixed": "SELECT s.id, s.cat FROM src s WHERE s.amount > (SELECT AVG(s2.amount) "
            "FROM src s2 WHERE s2.cat = s.cat) - (SELECT MIN(d.weight) FROM dim d)",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_grouped_subqueries_not_in_and_derived_tables(spark, initial, steps):
    """IN over a grouped subquery with HAVING; NOT IN over a dimension whose categories may be
    NULL (then no row is kept); an aggregate over a grouped derived table (groups move between
    the outer groups as they change); a HAVING over a scalar subquery, and a grouped derived
    table joined to a table and filtered by its maximum (TPC-H Q11's and Q15's shapes: stages)."""
    check_history(
        spark,
        {
            "heavy": "SELECT d.cat, COUNT(*) AS n FROM dim d WHERE d.cat IN "
            "(SELECT s.cat FROM src s GROUP BY s.cat HAVING SUM(s.qty) > 1) GROUP BY d.cat",
            "outside": "SELECT s.id, s.cat, s.qty FROM src s WHERE s.cat NOT IN "
            "(SELECT d.cat FROM dim d WHERE d.weight > 1)",
            "spread": "SELECT n, COUNT(*) AS cats, SUM(total) AS s FROM (SELECT s.cat, "
            "COUNT(d.label) AS n, SUM(s.amount) AS total FROM src s LEFT JOIN dim d "
            "ON s.cat = d.cat GROUP BY s.cat) AS per_cat GROUP BY n",
            "above_weight": "SELECT s.cat, SUM(s.qty) AS q FROM src s GROUP BY s.cat "
            "HAVING SUM(s.qty) > (SELECT AVG(d.weight) FROM dim d)",
            "best": "SELECT d.cat, d.label, t.total FROM dim d JOIN (SELECT s.cat, SUM(s.qty) "
            "AS total FROM src s GROUP BY s.cat) t ON d.cat = t.cat WHERE t.total = "
            "(SELECT MAX(x.total) FROM (SELECT s3.cat, SUM(s3.qty) AS total FROM src s3 "
            "GROUP BY s3.cat) x)",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_top_n_reads_its_top_from_the_ranked_rows(spark, initial, steps):
    """The top rows of a projection, of an aggregate (with OFFSET, NULLs first) and of a join
    ordered by an expression it does not select: rows enter and leave the top as the ranked
    rows change below it."""
    check_history(
        spark,
        {
            "top_rows": "SELECT s.id, s.cat, s.amount FROM src s "
            "ORDER BY s.amount DESC NULLS LAST, s.id LIMIT 3",
            "top_groups": "SELECT cat, SUM(amount) AS total, COUNT(*) AS n FROM src GROUP BY cat "
            "ORDER BY total DESC, cat NULLS FIRST LIMIT 2 OFFSET 1",
            "by_weight": "SELECT s.id, d.label FROM src s JOIN dim d ON s.cat = d.cat "
            "ORDER BY s.qty * d.weight DESC NULLS LAST, s.id, d.label LIMIT 2",
        },
        initial,
        steps,
    )


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_compositions_of_top_n_derived_tables_and_scalar_subqueries(spark, initial, steps):
    """Rules composed by the tree: the top rows of a windowed query and of a DISTINCT; a derived
    table that is a top-N, filtered (a stage holding its own ranked rows); scalar subqueries in
    the SELECT list and inside CASE (one-row stages joined to every row), and a row of them
    without FROM."""
    check_history(
        spark,
        {
            "top_ranked": "SELECT s.id, s.cat, RANK() OVER (PARTITION BY s.cat ORDER BY s.qty) "
            "AS r FROM src s ORDER BY r, s.id LIMIT 3",
            "top_distinct": "SELECT DISTINCT s.cat, s.qty FROM src s "
            "ORDER BY s.qty DESC NULLS LAST, s.cat LIMIT 2",
            "from_top": "SELECT t.cat, t.amount FROM (SELECT s.cat, s.amount, s.id FROM src s "
            "ORDER BY s.amount DESC NULLS LAST, s.id LIMIT 2) t WHERE t.amount > 0",
            "scalars": "SELECT s.id, (SELECT COUNT(*) FROM dim d) AS dims, CASE WHEN (SELECT "
            "COUNT(*) FROM dim d2) > 2 THEN (SELECT AVG(d3.weight) FROM dim d3) ELSE 0 END AS w "
            "FROM src s",
            "row_of_scalars": "SELECT CASE WHEN (SELECT COUNT(*) FROM src s) > 2 THEN (SELECT "
            "SUM(d.weight) FROM dim d) ELSE -1 END AS w",
        },
        initial,
        steps,
    )
