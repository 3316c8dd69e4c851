"""The keys of a query, found in its text alone: the GROUP BY, DISTINCT or shared PARTITION BY that
key its result rows (key_of), and the join key that equalities hold across its tables and
subqueries (join_key), with the scopes, NOT IN tables and scalar parameters a change reads by."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.keys import JoinKey, join_key, key_of, uncorrelated


def select(sql: str) -> exp.Select:
    parsed = sqlglot.parse_one(sql, read="spark")
    assert isinstance(parsed, exp.Select)
    return parsed


def texts(expressions: list[exp.Expr] | None) -> list[str] | None:
    return None if expressions is None else [e.sql(dialect="spark") for e in expressions]


def found(sql: str) -> JoinKey:
    key = join_key(select(sql))
    assert key is not None, sql
    return key


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a", ["a"]),
        ("SELECT t.a, COUNT(*) AS n FROM t GROUP BY t.a", ["t.a"]),
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a, b", ["a", "b"]),
        ("SELECT COUNT(*) AS n FROM t GROUP BY a", ["a"]),
        ("SELECT a + 1 AS b, COUNT(*) AS n FROM t GROUP BY a + 1", ["a + 1"]),
        # ordinals and aliases name the select item's expression
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY 1", ["a"]),
        ("SELECT upper(a) AS k, COUNT(*) AS n FROM t GROUP BY k", ["UPPER(a)"]),
        ("SELECT a AS a, COUNT(*) AS n FROM t GROUP BY a", ["a"]),
        ("SELECT DISTINCT a, b + 1 AS c FROM t", ["a", "b + 1"]),
        ("SELECT DISTINCT upper(a) FROM t", ["UPPER(a)"]),
        ("SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS r FROM t", ["a"]),
        ("SELECT a FROM t QUALIFY ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) = 1", ["a"]),
        # every window's PARTITION BY holds a and c: in the first window's order
        (
            "SELECT a, RANK() OVER (PARTITION BY a, c ORDER BY b) AS r, "
            "SUM(b) OVER (PARTITION BY c, a) AS s FROM t",
            ["a", "c"],
        ),
        (
            "SELECT a, RANK() OVER (PARTITION BY a, c ORDER BY b) AS r, "
            "SUM(b) OVER (PARTITION BY a) AS s FROM t",
            ["a"],
        ),
        # windows over groups: their PARTITION BY must be among the GROUP BY expressions
        (
            "SELECT a, SUM(b) AS s, RANK() OVER (PARTITION BY a ORDER BY SUM(b)) AS r FROM t "
            "GROUP BY a, c",
            ["a"],
        ),
    ],
)
def test_the_key_of_a_grouping_a_distinct_or_shared_windows(sql: str, keys: list[str]) -> None:
    assert texts(key_of(select(sql))) == keys


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM t",
        "SELECT COUNT(*) AS n FROM t",
        "SELECT DISTINCT * FROM t",
        "SELECT DISTINCT a, COUNT(*) AS n FROM t",
        # an ordinal past the select list names no item
        "SELECT a, COUNT(*) AS n FROM t GROUP BY 3",
        "SELECT a, COUNT(*) AS n FROM t GROUP BY 0",
        # a grouping set's rows are of several groupings at once
        "SELECT a, COUNT(*) AS n FROM t GROUP BY ROLLUP (a)",
        "SELECT a, COUNT(*) AS n FROM t GROUP BY CUBE (a)",
        "SELECT a, COUNT(*) AS n FROM t GROUP BY GROUPING SETS ((a), ())",
        "SELECT a, COUNT(*) AS n FROM t GROUP BY a WITH ROLLUP",
        "SELECT a, COUNT(*) AS n FROM t GROUP BY a WITH CUBE",
        "SELECT a, RANK() OVER (PARTITION BY a ORDER BY b) AS r FROM t GROUP BY ROLLUP (a)",
        # grouping by an aggregate's result
        "SELECT SUM(b) AS s FROM t GROUP BY s",
        # one group of every row, or a parenthesized list
        "SELECT COUNT(*) AS n FROM t GROUP BY ()",
        "SELECT COUNT(*) AS n FROM t GROUP BY (a, b)",
        # windows without a PARTITION BY they all share
        "SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS r FROM t",
        "SELECT a, RANK() OVER (PARTITION BY a ORDER BY b), SUM(b) OVER () FROM t",
        "SELECT a, RANK() OVER (PARTITION BY a ORDER BY b), SUM(b) OVER (PARTITION BY c) FROM t",
        # a partition of the groups by what is not one of their keys
        "SELECT a, SUM(b) AS s, RANK() OVER (PARTITION BY c ORDER BY SUM(b)) FROM t GROUP BY a",
        "SELECT a, SUM(b) AS s, RANK() OVER (PARTITION BY SUM(b) ORDER BY a) FROM t GROUP BY a",
    ],
)
def test_no_key_when_a_result_row_can_come_from_rows_of_several_values(sql: str) -> None:
    assert key_of(select(sql)) is None


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        # DISTINCT makes one row of equal rows of several groups or partitions: it keeps the
        # key's expressions it selects, and no key when it selects none
        ("SELECT DISTINCT COUNT(*) AS n FROM t GROUP BY a", None),
        ("SELECT DISTINCT a FROM t GROUP BY a, c", ["a"]),
        ("SELECT DISTINCT a, b, COUNT(*) AS n FROM t GROUP BY a, b", ["a", "b"]),
        ("SELECT DISTINCT upper(a) AS k, COUNT(*) AS n FROM t GROUP BY k, c", ["UPPER(a)"]),
        ("SELECT DISTINCT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c) AS r FROM t", None),
        ("SELECT DISTINCT a, RANK() OVER (PARTITION BY a, b ORDER BY c) AS r FROM t", ["a"]),
        (
            "SELECT DISTINCT a, SUM(b) AS s, RANK() OVER (PARTITION BY a ORDER BY SUM(b)) AS r "
            "FROM t GROUP BY a, c",
            ["a"],
        ),
        # a qualified key is not taken for an unqualified item
        ("SELECT DISTINCT a FROM t GROUP BY t.a", None),
    ],
)
def test_a_distinct_over_groups_or_windows_is_keyed_by_the_key_it_selects(
    sql: str, keys: list[str] | None
) -> None:
    assert texts(key_of(select(sql))) == keys


@pytest.mark.parametrize(
    ("sql", "expression", "columns"),
    [
        # inner joins: the first table's column
        ("SELECT t.a, u.b FROM t JOIN u ON t.k = u.k", "t.k", {"t": "t.k", "u": "u.k"}),
        ("SELECT t.a FROM t, u WHERE t.k = u.k", "t.k", {"t": "t.k", "u": "u.k"}),
        ("SELECT t.a FROM t JOIN u ON t.k = u.k AND t.m = u.m", "t.k", {"t": "t.k", "u": "u.k"}),
        ("SELECT t.a FROM t x JOIN t ON x.k = t.k", "x.k", {"x": "x.k", "t": "t.k"}),
        # a table an outer join extends with NULLs does not give the key
        ("SELECT t.a, u.b FROM t LEFT JOIN u ON t.k = u.k", "t.k", {"t": "t.k", "u": "u.k"}),
        (
            "SELECT t.a, u.b FROM t RIGHT JOIN u ON u.k = t.k AND t.a > 1",
            "u.k",
            {"t": "t.k", "u": "u.k"},
        ),
        (
            "SELECT t.a FROM t LEFT JOIN u ON t.k = u.j AND t.m = u.m",
            "t.k",
            {"t": "t.k", "u": "u.j"},
        ),
        (
            "SELECT t.a FROM t LEFT JOIN u ON t.k = u.k RIGHT JOIN v ON v.k = u.k",
            "v.k",
            {"t": "t.k", "u": "u.k", "v": "v.k"},
        ),
        # every table may be NULL: the key is the first that is not
        (
            "SELECT t.a FROM t FULL JOIN u ON t.k = u.k",
            "COALESCE(t.k, u.k)",
            {"t": "t.k", "u": "u.k"},
        ),
        (
            "SELECT t.a FROM t FULL OUTER JOIN u ON t.k = u.k FULL JOIN v ON v.k = u.k",
            "COALESCE(t.k, u.k, v.k)",
            {"t": "t.k", "u": "u.k", "v": "v.k"},
        ),
        # semi and anti joins, and the subqueries they come from, are keyed by what ties them
        ("SELECT a FROM t LEFT SEMI JOIN u ON t.k = u.k", "t.k", {"t": "t.k", "u": "u.k"}),
        ("SELECT a FROM t LEFT ANTI JOIN u ON t.k = u.k", "t.k", {"t": "t.k", "u": "u.k"}),
        ("SELECT t.a FROM t WHERE t.k IN (SELECT u.k FROM u)", "t.k", {"t": "t.k", "u": "u.k"}),
        (
            "SELECT t.a FROM t WHERE t.k IN (SELECT u.k FROM u GROUP BY u.k)",
            "t.k",
            {"t": "t.k", "u": "u.k"},
        ),
        (
            "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
            "t.k",
            {"t": "t.k", "u": "u.k"},
        ),
        (
            "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.x AND u.y = t.y)",
            "t.x",
            {"t": "t.x", "u": "u.x"},
        ),
        (
            "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u JOIN v ON u.k = v.k WHERE u.k = t.k)",
            "t.k",
            {"t": "t.k", "u": "u.k", "v": "v.k"},
        ),
        (
            "SELECT t.a FROM t LEFT JOIN u ON t.k = u.k WHERE t.k IN (SELECT v.k FROM v)",
            "t.k",
            {"t": "t.k", "u": "u.k", "v": "v.k"},
        ),
        # names are compared as Spark does, without case
        ("SELECT T.a FROM T LEFT JOIN U ON T.K = U.K", "t.k", {"t": "t.k", "u": "u.k"}),
    ],
)
def test_the_join_key_as_a_result_row_and_each_table_give_it(
    sql: str, expression: str, columns: dict[str, str]
) -> None:
    key = found(sql)
    assert key.expression.sql(dialect="spark") == expression
    assert {alias: c.sql(dialect="spark") for alias, c in key.columns.items()} == columns


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT t.a FROM t",
        "SELECT t.a FROM t LEFT JOIN u ON t.a > u.k",
        # v is keyed by u.x, t by u.k: no one key covers every table an outer join reaches
        "SELECT t.a FROM t LEFT JOIN u ON t.k = u.k LEFT JOIN v ON u.x = v.x",
        # a FROM item that is no table, or an alias that names two tables
        "SELECT t.a FROM (SELECT * FROM u) t",
        "SELECT t.a FROM t JOIN t ON t.k = t.k",
        "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM t WHERE t.k = 1)",
        # a subquery whose rows depend on rows of other keys
        "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k LIMIT 1)",
        "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k ORDER BY u.x)",
        "SELECT t.a FROM t WHERE EXISTS "
        "(SELECT ROW_NUMBER() OVER (ORDER BY u.x) FROM u WHERE u.k = t.k)",
        # an IN of an aggregate of every row, or of two columns, ties no columns
        "SELECT t.a FROM t WHERE t.k IN (SELECT MAX(u.k) FROM u)",
        "SELECT t.a FROM t WHERE t.k IN (SELECT u.k, u.j FROM u)",
        # a subquery tied by no equality
        "SELECT t.a FROM t WHERE t.k = 1 AND EXISTS (SELECT 1 FROM u WHERE u.x = 2)",
        # a scalar that is no parameter: a second subquery in its conjunct
        "SELECT t.a FROM t JOIN u ON t.k = u.k WHERE t.v > (SELECT AVG(w.v) FROM w) + (SELECT 1)",
        # a parameter of a query with no key of its own
        "SELECT t.a FROM t WHERE t.v > (SELECT AVG(w.v) FROM w)",
    ],
)
def test_no_join_key_when_some_table_s_rows_are_not_read_by_key(sql: str) -> None:
    assert join_key(select(sql)) is None


@pytest.mark.parametrize(
    ("sql", "scopes"),
    [
        # v joins on another column: its changed rows give the keys of the rows they join
        (
            "SELECT t.a FROM t JOIN u ON t.k = u.k JOIN v ON v.x = u.x",
            {"v": "SELECT t.k FROM t JOIN u ON t.k = u.k JOIN v ON v.x = u.x"},
        ),
        (
            "SELECT t.a FROM t JOIN u ON t.k = u.k LEFT JOIN v ON v.x = u.x",
            {"t": "SELECT u.x FROM t JOIN u ON t.k = u.k LEFT JOIN v ON v.x = u.x"},
        ),
        (
            "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u JOIN v ON u.j = v.j WHERE u.k = t.k)",
            {"v": "SELECT u.k FROM u JOIN v ON u.j = v.j"},
        ),
        # a subquery tested by IN on another column: the keys of the rows it lets through
        (
            "SELECT t.a FROM t WHERE t.k IN (SELECT u.k FROM u WHERE u.j IN (SELECT v.j FROM v))",
            {"v": "SELECT u.k FROM u WHERE u.j IN (SELECT v.j FROM v)"},
        ),
        (
            "SELECT s.name FROM s WHERE s.k IN (SELECT ps.k FROM ps WHERE ps.p IN "
            "(SELECT p.p FROM p WHERE p.name LIKE 'f%'))",
            {"p": "SELECT ps.k FROM ps WHERE ps.p IN (SELECT p.p FROM p WHERE p.name LIKE 'f%')"},
        ),
        ("SELECT t.a FROM t JOIN u ON t.k = u.k", {}),
    ],
)
def test_tables_off_the_key_are_read_through_the_rows_that_join_them(
    sql: str, scopes: dict[str, str]
) -> None:
    key = found(sql)
    assert {alias: rows.sql(dialect="spark") for alias, rows in key.scopes.items()} == scopes


@pytest.mark.parametrize(
    ("sql", "aware"),
    [
        ("SELECT t.a FROM t WHERE t.k NOT IN (SELECT u.k FROM u)", {"u"}),
        (
            "SELECT t.a FROM t JOIN u ON t.k = u.k "
            "WHERE t.k NOT IN (SELECT v.k FROM v) AND t.k NOT IN (SELECT w.k FROM w)",
            {"v", "w"},
        ),
        # NOT EXISTS and an anti join test no NULL key
        ("SELECT t.a FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k)", set()),
        ("SELECT a FROM t LEFT ANTI JOIN u ON t.k = u.k", set()),
    ],
)
def test_the_tables_a_not_in_reads_are_null_aware(sql: str, aware: set[str]) -> None:
    assert found(sql).null_aware == aware


@pytest.mark.parametrize(
    ("sql", "parameters"),
    [
        (
            "SELECT t.a FROM t JOIN u ON t.k = u.k WHERE t.v > (SELECT AVG(w.v) FROM w)",
            [(
                "SELECT AVG(w.v) FROM w",
                "t.v > (SELECT AVG(w.v) FROM w)",
                "SELECT t.k FROM t JOIN u ON t.k = u.k",
                {"w"},
            )],
        ),
        (  # the conjunct's other columns are of the tables that test it
            "SELECT t.a FROM t JOIN u ON t.k = u.k WHERE t.v > (SELECT AVG(w.v) FROM w) + u.v",
            [(
                "SELECT AVG(w.v) FROM w",
                "t.v > (SELECT AVG(w.v) FROM w) + u.v",
                "SELECT t.k FROM t JOIN u ON t.k = u.k",
                {"w"},
            )],
        ),
        (  # tested inside a subquery: that scope's key rows
            "SELECT t.a FROM t WHERE t.k IN "
            "(SELECT u.k FROM u WHERE u.v > (SELECT AVG(w.v) FROM w))",
            [(
                "SELECT AVG(w.v) FROM w",
                "u.v > (SELECT AVG(w.v) FROM w)",
                "SELECT u.k FROM u",
                {"w"},
            )],
        ),
        (  # the key rows keep the conditions on the scope's own tables, not the subqueries
            "SELECT c.region FROM c WHERE c.bal > (SELECT AVG(c2.bal) FROM c c2 WHERE c2.bal > 0) "
            "AND NOT EXISTS (SELECT * FROM o WHERE o.k = c.k) AND c.bal < 100",
            [(
                "SELECT AVG(c2.bal) FROM c AS c2 WHERE c2.bal > 0",
                "c.bal > (SELECT AVG(c2.bal) FROM c AS c2 WHERE c2.bal > 0)",
                "SELECT c.k FROM c WHERE c.bal < 100",
                {"c2"},
            )],
        ),
        # a correlated scalar is a scope keyed by its correlation, not a parameter
        (
            "SELECT t.a FROM t JOIN u ON t.k = u.k "
            "WHERE t.v > (SELECT AVG(w.v) FROM w WHERE w.k = t.k)",
            [],
        ),
    ],
)  # fmt: skip
def test_an_uncorrelated_scalar_in_a_where_is_a_parameter_of_the_rows_it_decides(
    sql: str, parameters: list[tuple[str, str, str, set[str]]]
) -> None:
    held = found(sql).parameters
    assert [
        (
            p.query.sql(dialect="spark"),
            p.conjunct.sql(dialect="spark"),
            p.rows.sql(dialect="spark"),
            p.aliases,
        )
        for p in held
    ] == parameters


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT AVG(w.v) FROM w", True),
        ("SELECT AVG(w.v) FROM w AS x JOIN w ON x.k = w.k", True),
        ("SELECT AVG(w.v) FROM w WHERE w.k = t.k", False),
        # an unqualified column could be the outer query's
        ("SELECT AVG(v) FROM w", False),
    ],
)
def test_a_subquery_is_uncorrelated_when_each_column_names_its_own_tables(
    sql: str, expected: bool
) -> None:
    assert uncorrelated(select(sql)) is expected
