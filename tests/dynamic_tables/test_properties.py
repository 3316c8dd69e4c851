"""Incremental equals full, for projections, set operations, aggregates, inner joins, dynamic
tables on dynamic tables and keyed queries: random insert/update/delete histories on the sources
(see histories), and after every refresh the dynamic table holds exactly what its query gives when
run from scratch."""

from __future__ import annotations

from hypothesis import example, given

from lake_assets.dynamic_tables.runtime import pruning
from tests.dynamic_tables.histories import (
    BOTH_EXAMPLE,
    BOTH_STEPS,
    CLUSTERED_STEPS,
    INITIAL,
    SETTINGS,
    SRC_EXAMPLE,
    SRC_STEPS,
    check_history,
)


@SETTINGS
@given(initial=INITIAL, steps=SRC_STEPS)
@example(initial=SRC_EXAMPLE[0], steps=SRC_EXAMPLE[1])
def test_projection_filter_and_lateral_views_with_duplicate_rows(spark, initial, steps):
    """Row by row: a projection and filter (and a DROP ROW expectation); LATERAL VIEWs (OUTER: a
    NULL array gives one row), their rows aggregated, made DISTINCT and ranked."""
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
        dropping={"dt": "doubled > 0"},
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
        dropping={"dt": "s > 0 OR n > 2"},
    )


@SETTINGS
@given(initial=INITIAL, steps=CLUSTERED_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=[*BOTH_EXAMPLE[1], [("optimize", "src")]])
def test_inner_join_with_changes_on_both_sides(spark, initial, steps, monkeypatch):
    """Each side of a numeric key read only in the ranges of the other's change (every table
    counts as large here), NULL keys kept where `<=>` joins them; both tables clustered by the
    key, their files rewritten by OPTIMIZE between changes (a commit that changes no row)."""
    monkeypatch.setattr(pruning, "RESTRICT_MIN_ROWS", 0)
    check_history(
        spark,
        {
            "dt": "SELECT s.id, s.cat, d.label, s.amount * d.weight AS w "
            "FROM src s JOIN dim d ON s.cat = d.cat WHERE d.label IS NOT NULL",
            "by_weight": "SELECT s.id, d.label, s.amount FROM src s JOIN dim d "
            "ON s.qty <=> d.weight WHERE s.amount IS NULL OR s.amount > 0",
        },
        initial,
        steps,
        layout="ALTER TABLE src CLUSTER BY (cat); ALTER TABLE dim CLUSTER BY (cat)",
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
