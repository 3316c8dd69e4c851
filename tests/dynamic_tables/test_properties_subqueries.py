"""Incremental equals full, for outer joins, subqueries (correlated, grouped, NOT IN, scalars),
derived tables, top-N and the rules composed by the tree: random insert/update/delete histories
on the sources (see histories), and after every refresh the dynamic table holds exactly what its
query gives when run from scratch."""

from __future__ import annotations

from hypothesis import example, given

from lake_assets.dynamic_tables.runtime import pruning
from tests.dynamic_tables.histories import (
    BOTH_EXAMPLE,
    BOTH_STEPS,
    INITIAL,
    SETTINGS,
    check_history,
)


@SETTINGS
@given(initial=INITIAL, steps=BOTH_STEPS)
@example(initial=BOTH_EXAMPLE[0], steps=BOTH_EXAMPLE[1])
def test_outer_joins_and_subqueries_recompute_the_join_keys_a_change_touches(
    spark, initial, steps, monkeypatch
):
    """A LEFT JOIN to a dimension with a condition on it; a FULL JOIN grouped by its join key
    (NULL keys on both sides meet in one group); IN and NOT EXISTS subqueries (semi and anti
    joins, a NULL category matching nothing); an IN nested in an IN on another column (a change
    to the inner subquery's rows touches the categories of the rows it lets through); a grouped
    derived table on the NULL-extended side of a LEFT JOIN (kept in a stage); a LEFT JOIN and a
    NOT EXISTS by a numeric key, every table read only in the ranges of the touched keys (every
    table counts as large here)."""
    monkeypatch.setattr(pruning, "RESTRICT_MIN_ROWS", 0)
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
            "by_quantity": "SELECT s.id, s.qty, d.label FROM src s LEFT JOIN dim d "
            "ON s.qty = d.weight WHERE NOT EXISTS (SELECT 1 FROM dim x WHERE x.weight = s.qty "
            "AND x.label IS NULL)",
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
