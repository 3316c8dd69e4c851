"""Any query Spark runs is a dynamic table; subqueries, CTEs, derived tables refresh by changes."""

from __future__ import annotations

from lake_assets.session import LakeSession
from tests.dynamic_tables.refresh_helpers import columns, history_of, rows


def test_any_query_spark_runs_is_a_dynamic_table(summary: LakeSession) -> None:
    """An unnamed result keeps Spark's name (column mapping takes it), a WITH query is created,
    and an ORDER BY that only sorts is dropped, as DESC says."""
    summary.sql(
        "CREATE DYNAMIC TABLE unnamed AS SELECT category, COUNT(*), SUM(amount) FROM sales_ods "
        "GROUP BY category;"
        "CREATE DYNAMIC TABLE spaced AS SELECT id, amount * 2 AS `twice the amount` "
        "FROM sales_ods;"
        "CREATE DYNAMIC TABLE with_cte AS WITH revenue AS (SELECT category, SUM(amount) AS total "
        "FROM sales_ods GROUP BY category) SELECT category, total FROM revenue "
        "WHERE total = (SELECT MAX(total) FROM revenue);"
        "CREATE DYNAMIC TABLE sorted AS SELECT id, amount FROM sales_ods ORDER BY amount DESC"
    )
    assert columns(summary, "SELECT * FROM unnamed") == ["category", "count(1)", "sum(amount)"]
    assert columns(summary, "SELECT * FROM spaced") == ["id", "twice the amount"]
    described = dict(rows(summary, "DESC DYNAMIC TABLE sorted"))
    assert described["notes"] == (
        "ORDER BY is ignored: a table's rows have no order; sort when you query it"
    )
    assert described["refresh_mode"] == "INCREMENTAL"
    assert dict(rows(summary, "DESC DYNAMIC TABLE unnamed"))["notes"] is None

    summary.sql(
        "INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02');"
        "REFRESH DYNAMIC TABLE unnamed; REFRESH DYNAMIC TABLE spaced; "
        "REFRESH DYNAMIC TABLE with_cte; REFRESH DYNAMIC TABLE sorted"
    )
    for name in ("unnamed", "spaced", "sorted"):
        assert history_of(summary, name)[0]["refresh_mode"] == "INCREMENTAL"
    for name, query in (
        ("unnamed", "SELECT category, COUNT(*), SUM(amount) FROM sales_ods GROUP BY category"),
        ("spaced", "SELECT id, amount * 2 FROM sales_ods"),
        ("with_cte", "SELECT category, SUM(amount) FROM sales_ods GROUP BY category "
         "ORDER BY 2 DESC LIMIT 1"),
        ("sorted", "SELECT id, amount FROM sales_ods"),
    ):  # fmt: skip
        assert sorted(rows(summary, f"SELECT * FROM {name}")) == sorted(rows(summary, query))


def test_subqueries_and_derived_tables_refresh_incrementally(summary: LakeSession) -> None:
    """The sources' columns say which table an unqualified name is (the subquery's own first);
    EXISTS, NOT EXISTS over the same table and IN then run as semi and anti joins, a derived
    table that only projects and filters is merged into the query that reads it, and CTEs are
    the derived tables they stand for."""
    promoted = (
        "SELECT category, COUNT(*) AS n, SUM(amount) AS total FROM sales_ods "
        "WHERE EXISTS (SELECT 1 FROM promos WHERE promo_category = category AND active) "
        "AND NOT EXISTS (SELECT 1 FROM promos WHERE promo_category = category AND active IS NULL) "
        "GROUP BY category"
    )
    listed = (
        "SELECT id, product FROM sales_ods WHERE category IN (SELECT promo_category FROM promos)"
    )
    derived = (
        "SELECT category, SUM(doubled) AS total, MAX(d) AS latest FROM (SELECT category, "
        "amount * 2 AS doubled, dt AS d FROM sales_ods WHERE amount > 100) AS s "
        "WHERE doubled < 20000 GROUP BY category"
    )
    counted = (
        "WITH big AS (SELECT id, category, amount FROM sales_ods WHERE amount > 100), "
        "per AS (SELECT category, COUNT(*) AS n FROM big GROUP BY category) "
        "SELECT n, COUNT(*) AS categories FROM per GROUP BY n"
    )
    joined = (
        "WITH big AS (SELECT s.id, s.category FROM sales_ods s WHERE s.amount > 100) "
        "SELECT big.id, p.active FROM big JOIN promos p ON big.category = p.promo_category"
    )
    summary.sql(
        "CREATE TABLE promos (promo_category STRING, active BOOLEAN);"
        "INSERT INTO promos VALUES ('Books', TRUE), ('Sports', TRUE), ('Sports', NULL);"
        f"CREATE DYNAMIC TABLE promoted REFRESH_MODE = INCREMENTAL AS {promoted};"
        f"CREATE DYNAMIC TABLE listed REFRESH_MODE = INCREMENTAL AS {listed};"
        f"CREATE DYNAMIC TABLE derived REFRESH_MODE = INCREMENTAL AS {derived};"
        f"CREATE DYNAMIC TABLE counted REFRESH_MODE = INCREMENTAL AS {counted};"
        f"CREATE DYNAMIC TABLE joined REFRESH_MODE = INCREMENTAL AS {joined}"
    )
    assert columns(summary, "SELECT * FROM derived") == ["category", "total", "latest"]
    summary.sql(
        "INSERT INTO promos VALUES ('Electronics', TRUE);"
        "DELETE FROM promos WHERE promo_category = 'Sports' AND active IS NULL;"
        "INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02');"
        "REFRESH DYNAMIC TABLE promoted; REFRESH DYNAMIC TABLE listed;"
        "REFRESH DYNAMIC TABLE derived; REFRESH DYNAMIC TABLE counted; REFRESH DYNAMIC TABLE joined"
    )
    queries = {
        "promoted": promoted, "listed": listed, "derived": derived, "counted": counted,
        "joined": joined,
    }  # fmt: skip
    for name, query in queries.items():
        assert history_of(summary, name)[0]["refresh_mode"] == "INCREMENTAL"
        assert sorted(rows(summary, f"SELECT * FROM {name}")) == sorted(rows(summary, query))
    assert sorted(rows(summary, "SELECT category, n FROM promoted")) == [
        ("Books", 2), ("Electronics", 2), ("Sports", 2),
    ]  # fmt: skip


def refreshed_through(lake: LakeSession, name: str, query: str, steps: list[str]) -> list[list]:
    """The table's rows after each step and an incremental refresh, each equal to its query's."""
    held = []
    for step in steps:
        lake.sql(f"{step}; REFRESH DYNAMIC TABLE {name}")
        assert history_of(lake, name)[0]["refresh_mode"] == "INCREMENTAL"
        held.append(sorted(rows(lake, f"SELECT * FROM {name}"), key=str))
        assert held[-1] == sorted(rows(lake, query), key=str), step
    return held


def test_not_in_follows_the_nulls_of_its_subquery(summary: LakeSession) -> None:
    """One NULL among NOT IN's rows keeps no row at all; a row whose category is NULL is kept
    only while the subquery has no rows."""
    allowed = (
        "SELECT id, category FROM sales_ods WHERE category NOT IN (SELECT b.category FROM banned b)"
    )
    summary.sql(
        "CREATE TABLE banned (category STRING); INSERT INTO banned VALUES ('Sports');"
        f"CREATE DYNAMIC TABLE allowed REFRESH_MODE = INCREMENTAL AS {allowed}"
    )
    steps = [
        "INSERT INTO banned VALUES (NULL)",
        "INSERT INTO sales_ods VALUES (6, 'Dune', NULL, 45.50, '2026-06-02')",
        "DELETE FROM banned WHERE category IS NULL",
        "DELETE FROM banned",
        "INSERT INTO banned VALUES ('Books')",
    ]
    held = refreshed_through(summary, "allowed", allowed, steps)
    assert [len(rows_held) for rows_held in held] == [0, 0, 3, 6, 4]


def test_an_uncorrelated_scalar_subquery_touches_the_rows_it_decides_otherwise(
    summary: LakeSession,
) -> None:
    """When the average moves, rows that did not change cross it: their keys are recomputed."""
    above = (
        "SELECT category, COUNT(*) AS n, SUM(amount) AS total FROM sales_ods s "
        "WHERE amount > (SELECT AVG(a.amount) FROM sales_ods a) "
        "AND NOT EXISTS (SELECT * FROM banned b WHERE b.category = s.category) GROUP BY category"
    )
    summary.sql(
        "CREATE TABLE banned (category STRING);"
        f"CREATE DYNAMIC TABLE above REFRESH_MODE = INCREMENTAL AS {above}"
    )
    steps = [
        "INSERT INTO sales_ods VALUES (6, 'Dune', 'Books', 45.50, '2026-06-02')",
        "UPDATE sales_ods SET amount = 100 WHERE id = 2",
        "DELETE FROM sales_ods WHERE id = 1",
        "INSERT INTO banned VALUES ('Sports')",
        "INSERT INTO sales_ods VALUES (7, 'Lego', 'Toys', 100000, '2026-06-02')",
    ]
    held = refreshed_through(summary, "above", above, steps)
    assert [[(category, n) for category, n, _ in rows_held] for rows_held in held] == [
        [("Electronics", 2)],
        [("Electronics", 1)],
        [("Books", 1), ("Sports", 2)],
        [("Books", 1)],
        [("Toys", 1)],
    ]
