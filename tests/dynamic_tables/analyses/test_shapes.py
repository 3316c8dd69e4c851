"""Why a SELECT cannot be maintained from its sources' changes where it stands, in the words a
FULL refresh records; which SELECTs are kept by recomputing their keys instead; and the shapes of
FROM (a derived table, outer joins, subqueries) that decide how a change is computed."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.shapes import (
    by_join_key,
    derived_table,
    has_subqueries,
    keyed_keys,
    nested_set_operation,
    outer_join,
    select_problem,
)

SUBQUERIES = (
    "subqueries are refreshed in full unless equalities (a correlation, or IN) tie each one's "
    "tables to a key of the rows the query reads, and they have no ORDER BY, LIMIT or window"
)
DERIVED = (
    "a derived table (FROM (SELECT …)) is refreshed in full unless it only projects and filters, "
    "or has a key: GROUP BY, DISTINCT or a PARTITION BY its windows share"
)
LATERAL_BESIDE = (
    "LATERAL VIEW beside outer joins, subqueries or a derived table is refreshed in full"
)


def outer_problem(kind: str) -> str:
    return (
        f"{kind} JOIN is refreshed in full unless equalities in the joins' ON (or the WHERE) join "
        "every table on one key"
    )


def select(sql: str) -> exp.Select:
    parsed = sqlglot.parse_one(sql, read="spark")
    assert isinstance(parsed, exp.Select)
    return parsed


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        # clauses that keep or drop a row by looking at the others
        ("SELECT DISTINCT a FROM t", "SELECT DISTINCT is refreshed in full"),
        ("SELECT a FROM t LIMIT 5", "LIMIT is refreshed in full"),
        ("SELECT a FROM t OFFSET 5", "OFFSET is refreshed in full"),
        ("SELECT a FROM t ORDER BY a", "ORDER BY is refreshed in full"),
        ("SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", "HAVING is refreshed in full"),
        (
            "SELECT a FROM t QUALIFY ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) = 1",
            "QUALIFY is refreshed in full",
        ),
        ("SELECT a FROM t SORT BY a", "SORT BY is refreshed in full"),
        ("SELECT a FROM t CLUSTER BY a", "CLUSTER BY is refreshed in full"),
        ("SELECT a FROM t DISTRIBUTE BY a", "DISTRIBUTE BY is refreshed in full"),
        # the first clause named is the one the reason gives
        ("SELECT DISTINCT a FROM t ORDER BY a LIMIT 3", "SELECT DISTINCT is refreshed in full"),
        ("SELECT a FROM t ORDER BY a LIMIT 3", "LIMIT is refreshed in full"),
        # LATERAL VIEW: generators of one row's rows only, over inner joins of tables
        (
            "SELECT x FROM t LATERAL VIEW json_tuple(t.j, 'a') e AS x",
            "LATERAL VIEW JSON_TUPLE(t.j, 'a') is refreshed in full",
        ),
        (
            "SELECT t.a, x FROM t LEFT JOIN u ON t.k = u.k LATERAL VIEW explode(u.c) e AS x",
            LATERAL_BESIDE,
        ),
        ("SELECT x FROM (SELECT a FROM t) s LATERAL VIEW explode(s.a) e AS x", LATERAL_BESIDE),
        (
            "SELECT t.a, x FROM t LATERAL VIEW explode(t.c) e AS x "
            "WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
            LATERAL_BESIDE,
        ),
        # windows
        (
            "SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS r FROM t",
            "window functions are refreshed in full",
        ),
        (
            "SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS r FROM t",
            "window functions are refreshed in full",
        ),
        (  # in a derived table too
            "SELECT a FROM (SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS r FROM t) s",
            "window functions are refreshed in full",
        ),
        # functions whose rows read differently each time
        ("SELECT a, rand() AS r FROM t", "non-deterministic function RAND() is refreshed in full"),
        (
            "SELECT a FROM t WHERE random() > 0.5",
            "non-deterministic function RAND() is refreshed in full",
        ),
        (
            "SELECT a, randn(1) AS r FROM t",
            "non-deterministic function RANDN(1) is refreshed in full",
        ),
        ("SELECT a, uuid() AS r FROM t", "non-deterministic function UUID() is refreshed in full"),
        (
            "SELECT a, shuffle(b) AS r FROM t",
            "non-deterministic function SHUFFLE(b) is refreshed in full",
        ),
        (
            "SELECT a, current_timestamp() AS r FROM t",
            "non-deterministic function CURRENT_TIMESTAMP() is refreshed in full",
        ),
        # unix_timestamp() without an argument reads the clock
        (
            "SELECT a, unix_timestamp() AS r FROM t",
            "non-deterministic function CURRENT_TIMESTAMP() is refreshed in full",
        ),
        (
            "SELECT a, current_date() AS r FROM t",
            "non-deterministic function CURRENT_DATE is refreshed in full",
        ),
        (
            "SELECT a, current_user() AS r FROM t",
            "non-deterministic function CURRENT_USER() is refreshed in full",
        ),
        ("SELECT a, now() AS r FROM t", "non-deterministic function NOW() is refreshed in full"),
        ("SELECT a, user() AS r FROM t", "non-deterministic function USER() is refreshed in full"),
        (
            "SELECT a, monotonically_increasing_id() AS r FROM t",
            "non-deterministic function MONOTONICALLY_INCREASING_ID() is refreshed in full",
        ),
        (
            "SELECT a, spark_partition_id() AS r FROM t",
            "non-deterministic function SPARK_PARTITION_ID() is refreshed in full",
        ),
        (
            "SELECT a, input_file_name() AS r FROM t",
            "non-deterministic function INPUT_FILE_NAME() is refreshed in full",
        ),
        # what FROM reads
        ("SELECT 1 AS one", "a query without FROM is refreshed in full"),
        ("SELECT a FROM range(10)", "a FROM item that is not a table is refreshed in full"),
        (
            "SELECT a FROM VALUES (1), (2) AS v(a)",
            "a FROM item that is not a table is refreshed in full",
        ),
        ("SELECT a FROM t, range(3) r", "a FROM item that is not a table is refreshed in full"),
        (
            "SELECT s.a FROM (SELECT a FROM t) s JOIN u ON s.a = u.a",
            "a FROM item that is not a table is refreshed in full",
        ),
        ("SELECT a FROM t VERSION AS OF 3", "time travel and TABLESAMPLE are refreshed in full"),
        (
            "SELECT a FROM t TIMESTAMP AS OF '2024-01-01'",
            "time travel and TABLESAMPLE are refreshed in full",
        ),
        (
            "SELECT a FROM t TABLESAMPLE (10 PERCENT)",
            "time travel and TABLESAMPLE are refreshed in full",
        ),
        ("SELECT * FROM t PIVOT (SUM(v) FOR k IN ('a', 'b'))", "PIVOT is refreshed in full"),
        # a derived table without a key (one that only projects and filters is merged before)
        ("SELECT a FROM (SELECT t.a FROM t WHERE t.b > 0) s", DERIVED),
        ("SELECT a FROM (SELECT a FROM t LIMIT 3) s", DERIVED),
        ("SELECT a FROM (SELECT a FROM t UNION SELECT a FROM u) s", DERIVED),
        (
            "SELECT a FROM (SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)) s",
            DERIVED,
        ),
        # outer, semi and anti joins without one key over every table
        ("SELECT t.a FROM t LEFT JOIN u ON t.a > u.k", outer_problem("LEFT")),
        ("SELECT t.a FROM t RIGHT OUTER JOIN u ON t.a > u.k", outer_problem("RIGHT OUTER")),
        ("SELECT t.a FROM t FULL JOIN u ON t.k = u.k OR t.a = u.a", outer_problem("FULL")),
        ("SELECT t.a FROM t LEFT SEMI JOIN u ON t.a > u.k", outer_problem("LEFT SEMI")),
        ("SELECT t.a FROM t LEFT ANTI JOIN u ON t.a > u.k", outer_problem("LEFT ANTI")),
        (
            "SELECT t.a FROM t LEFT JOIN u ON t.k = u.k LEFT JOIN v ON u.x = v.x",
            outer_problem("LEFT"),
        ),
        # subqueries not tied to a key of the rows read
        ("SELECT a FROM t WHERE a IN (SELECT a FROM u)", SUBQUERIES),
        ("SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k LIMIT 1)", SUBQUERIES),
        ("SELECT t.a FROM t WHERE t.v > (SELECT AVG(u.v) FROM u)", SUBQUERIES),
    ],
)
def test_the_reason_a_select_is_refreshed_in_full(sql: str, problem: str) -> None:
    assert select_problem(select(sql)) == problem


@pytest.mark.parametrize(
    "function",
    [
        # parsed into classes of their own
        "localtimestamp()", "localtime()", "session_user()", "current_user()", "uniform(0, 10)",
        "randstr(5)", "random()", "uuid()", "shuffle(array(1, 2))", "current_date()",
        "curdate()", "current_time()", "utc_timestamp()", "unix_timestamp()",
        "current_timezone()", "current_catalog()", "current_database()", "current_schema()",
        "date_sub(current_date(), 1)",
        # left anonymous
        "now()", "user()", "monotonically_increasing_id()", "spark_partition_id()",
        "input_file_name()", "reflect('java.util.UUID', 'randomUUID')",
    ],
)  # fmt: skip
def test_every_non_deterministic_function_is_refreshed_in_full(function: str) -> None:
    problem = select_problem(select(f"SELECT a, {function} AS r FROM t"))
    assert (problem or "").startswith("non-deterministic function")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, b * 2 AS c FROM t WHERE a > 1",
        "SELECT a FROM db.t",
        "SELECT t.a FROM t, u WHERE t.k = u.k",
        "SELECT t.a FROM t CROSS JOIN u",
        "SELECT t.a FROM t JOIN u ON t.a > u.k",
        "SELECT a FROM t JOIN u USING (k)",
        "SELECT t.a FROM t LEFT JOIN u ON t.k = u.k",
        "SELECT t.a FROM t WHERE t.a IN (SELECT u.a FROM u)",
        "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
        "SELECT a FROM (SELECT DISTINCT a FROM t) s",
        "SELECT a FROM (SELECT a, COUNT(*) AS n FROM t GROUP BY a) s",
        "SELECT x FROM t LATERAL VIEW explode(t.b) e AS x",
        "SELECT x FROM t LATERAL VIEW posexplode(t.b) e AS p, x",
        "SELECT x FROM t LATERAL VIEW inline(t.b) e AS x, y",
        "SELECT x FROM t LATERAL VIEW stack(2, t.a, t.b) e AS x",
        "SELECT a, unix_timestamp(b) AS s FROM t",
    ],
)
def test_a_select_maintained_from_changes_has_no_problem(sql: str) -> None:
    assert select_problem(select(sql)) is None


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        ("SELECT DISTINCT a FROM t", ["a"]),
        ("SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", ["a"]),
        ("SELECT a FROM t QUALIFY ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) = 1", ["a"]),
        ("SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS r FROM t", ["a"]),
        ("SELECT DISTINCT x FROM t LATERAL VIEW explode(t.c) e AS x", ["x"]),
        ("SELECT DISTINCT t.a FROM t LEFT JOIN u ON t.k = u.k", ["t.a"]),
        ("SELECT DISTINCT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)", ["t.a"]),
        (
            "SELECT a, SUM(b) OVER (PARTITION BY a) AS s FROM t "
            "WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
            ["a"],
        ),
        # a derived table's key is found in it, not in the query over it
        (
            "SELECT a FROM (SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS r FROM t) s "
            "WHERE r = 1",
            ["a"],
        ),
    ],
)
def test_a_select_refreshed_by_its_keys(sql: str, keys: list[str]) -> None:
    found = keyed_keys(select(sql))
    assert found is not None
    assert [key.sql(dialect="spark") for key in found] == keys


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM t",  # no key: maintained row by row
        "SELECT a FROM t LIMIT 5",
        "SELECT DISTINCT a FROM t LIMIT 3",
        "SELECT DISTINCT a FROM t ORDER BY a",
        "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1 LIMIT 3",
        "SELECT a FROM t SORT BY a",
        "SELECT DISTINCT a, rand() FROM t",
        "SELECT DISTINCT a FROM t VERSION AS OF 1",
        "SELECT DISTINCT s.a FROM (SELECT a FROM t) s",
        "SELECT DISTINCT a FROM t WHERE a IN (SELECT b FROM u)",
        "SELECT DISTINCT x FROM t LATERAL VIEW json_tuple(t.j, 'a') e AS x",
        "SELECT a FROM (SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS r FROM t) s WHERE r = 1",
    ],
)
def test_no_keys_where_a_key_s_rows_depend_on_other_keys(sql: str) -> None:
    assert keyed_keys(select(sql)) is None


@pytest.mark.parametrize(
    ("sql", "derived"),
    [
        ("SELECT a FROM (SELECT t.a FROM t) s", "(SELECT t.a FROM t) AS s"),
        (
            "SELECT a FROM (SELECT a FROM t UNION SELECT a FROM u) s",
            "(SELECT a FROM t UNION SELECT a FROM u) AS s",
        ),
        ("SELECT a FROM t", None),
        ("SELECT s.a FROM (SELECT a FROM t) s JOIN u ON s.a = u.a", None),  # not its only item
        ("SELECT a FROM t WHERE a IN (SELECT b FROM u)", None),
    ],
)
def test_the_derived_table_a_select_reads_as_its_only_from_item(sql: str, derived: str) -> None:
    found = derived_table(select(sql))
    assert (found.sql(dialect="spark") if found is not None else None) == derived


@pytest.mark.parametrize(
    ("sql", "by_key", "subqueries"),
    [
        ("SELECT t.a FROM t JOIN u ON t.k = u.k", False, False),
        ("SELECT t.a FROM t, u WHERE t.k = u.k", False, False),
        ("SELECT t.a FROM t LEFT JOIN u ON t.k = u.k", True, False),
        ("SELECT t.a FROM t LEFT ANTI JOIN u ON t.k = u.k", True, False),
        ("SELECT t.a FROM t WHERE t.a IN (SELECT u.a FROM u)", True, True),
        ("SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)", True, True),
        # the derived table read is no subquery of the select's own
        ("SELECT a FROM (SELECT DISTINCT a FROM t) s", False, False),
        ("SELECT s.a FROM (SELECT a FROM t) s WHERE s.a IN (SELECT u.a FROM u)", True, True),
    ],
)
def test_outer_joins_and_subqueries_change_by_the_join_key(
    sql: str, by_key: bool, subqueries: bool
) -> None:
    parsed = select(sql)
    assert (by_join_key(parsed), has_subqueries(parsed)) == (by_key, subqueries)


@pytest.mark.parametrize(
    ("join", "outer"),
    [
        ("JOIN u ON t.k = u.k", False),
        ("INNER JOIN u ON t.k = u.k", False),
        ("CROSS JOIN u", False),
        (", u", False),
        ("NATURAL JOIN u", False),
        ("LEFT JOIN u ON t.k = u.k", True),
        ("LEFT OUTER JOIN u ON t.k = u.k", True),
        ("RIGHT JOIN u ON t.k = u.k", True),
        ("FULL OUTER JOIN u ON t.k = u.k", True),
        ("LEFT SEMI JOIN u ON t.k = u.k", True),
        ("LEFT ANTI JOIN u ON t.k = u.k", True),
        ("SEMI JOIN u ON t.k = u.k", True),
        ("ANTI JOIN u ON t.k = u.k", True),
    ],
)
def test_a_join_is_outer_when_a_joined_row_depends_on_other_rows(join: str, outer: bool) -> None:
    (joined,) = select(f"SELECT t.a FROM t {join}").args["joins"]
    assert outer_join(joined) is outer


@pytest.mark.parametrize(
    ("sql", "nested"),
    [
        ("SELECT a FROM t EXCEPT (SELECT a FROM u INTERSECT SELECT a FROM v)", [False, True]),
        ("(SELECT a FROM t UNION SELECT a FROM u) EXCEPT SELECT a FROM v", [True, False]),
        ("SELECT a FROM t EXCEPT (SELECT a FROM u)", [False, False]),  # a query, not a set
        ("SELECT a FROM t UNION ALL SELECT a FROM u", [False, False]),
    ],
)
def test_a_set_operation_in_parentheses_inside_another(sql: str, nested: list[bool]) -> None:
    query = sqlglot.parse_one(sql, read="spark")
    assert [nested_set_operation(side) for side in (query.this, query.expression)] == nested
