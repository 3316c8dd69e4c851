"""UPDATE and DELETE with subqueries in WHERE, rewritten to the MERGE that means the same, and
the shapes without an exact MERGE refused in one line."""

from __future__ import annotations

import pytest
import sqlglot

from lake_assets.core.errors import LakeError
from lake_assets.sql.subqueries import subquery_merge

KEY = "__lake_matches.__lake_key_0_0"


def rewritten(text: str) -> str:
    return subquery_merge(sqlglot.parse_one(text, read="spark")).sql("spark")


def refusal(text: str) -> str:
    with pytest.raises(LakeError) as raised:
        rewritten(text)
    assert "\n" not in str(raised.value)
    return str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "UPDATE t SET age = 1 WHERE id = 3",
        "DELETE FROM t WHERE id IN (1, 2)",
        "DELETE FROM t",
        "INSERT INTO t SELECT * FROM s WHERE id IN (SELECT id FROM u)",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
    ],
)
def test_statements_without_subqueries_in_update_or_delete_stay_as_written(text: str):
    statement = sqlglot.parse_one(text, read="spark")
    assert subquery_merge(statement) is statement


def test_in_a_subquery_matches_its_distinct_rows():
    assert rewritten("UPDATE tgt SET age = -1 WHERE id IN (SELECT id - 1 FROM s)") == (
        "MERGE INTO tgt USING (SELECT DISTINCT * FROM (SELECT id - 1 FROM s) "
        "AS __lake_query(__lake_key_0_0)) AS __lake_matches "
        f"ON id = {KEY} WHEN MATCHED THEN UPDATE SET age = -1"
    )


def test_delete_deletes_the_matched_rows_and_other_conditions_go_into_the_clause():
    assert rewritten(
        "DELETE FROM tgt WHERE (age > 1 AND id IN (SELECT id FROM s)) AND (name = 'a' OR age < 0)"
    ) == (
        "MERGE INTO tgt USING (SELECT DISTINCT * FROM (SELECT id FROM s) "
        "AS __lake_query(__lake_key_0_0)) AS __lake_matches "
        f"ON id = {KEY} WHEN MATCHED AND age > 1 AND (name = 'a' OR age < 0) THEN DELETE"
    )


def test_a_tuple_in_compares_every_column():
    assert rewritten("DELETE FROM t WHERE (id, name) IN (SELECT id, name FROM s)") == (
        "MERGE INTO t USING (SELECT DISTINCT * FROM (SELECT id, name FROM s) "
        "AS __lake_query(__lake_key_0_0, __lake_key_0_1)) AS __lake_matches "
        f"ON id = {KEY} AND name = __lake_matches.__lake_key_0_1 WHEN MATCHED THEN DELETE"
    )


def test_a_correlated_exists_joins_on_its_equalities_and_keeps_its_other_conditions():
    assert rewritten(
        "UPDATE tgt AS x SET x.age = 0 WHERE EXISTS (SELECT * FROM s JOIN u ON s.a = u.a "
        "WHERE x.id = s.id AND u.b > 2 AND s.k + 1 = x.k)"
    ) == (
        "MERGE INTO tgt AS x USING (SELECT DISTINCT s.id AS __lake_key_0_0, "
        "s.k + 1 AS __lake_key_0_1 FROM s JOIN u ON s.a = u.a WHERE u.b > 2) AS __lake_matches "
        f"ON x.id = {KEY} AND x.k = __lake_matches.__lake_key_0_1 "
        "WHEN MATCHED THEN UPDATE SET x.age = 0"
    )


def test_a_correlated_in_compares_its_column_and_its_equalities():
    assert rewritten("DELETE FROM t WHERE age IN (SELECT u.age FROM u WHERE u.k = t.k)") == (
        "MERGE INTO t USING (SELECT DISTINCT u.age AS __lake_key_0_0, u.k AS __lake_key_0_1 "
        f"FROM u) AS __lake_matches ON age = {KEY} AND t.k = __lake_matches.__lake_key_0_1 "
        "WHEN MATCHED THEN DELETE"
    )


def test_not_exists_is_the_rows_no_source_row_matches():
    assert rewritten(
        "DELETE FROM t WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.id = t.id) AND age > 3"
    ) == (
        "MERGE INTO t USING (SELECT DISTINCT s.id AS __lake_key_0_0 FROM s) AS __lake_matches "
        f"ON t.id = {KEY} WHEN NOT MATCHED BY SOURCE AND age > 3 THEN DELETE"
    )


def test_an_uncorrelated_exists_matches_every_row_once_when_the_subquery_has_rows():
    assert rewritten("DELETE FROM t WHERE EXISTS (SELECT 1 FROM s WHERE s.x > 1)") == (
        "MERGE INTO t USING (SELECT DISTINCT TRUE AS __lake_key_0_0 FROM "
        "(SELECT 1 FROM s WHERE s.x > 1) AS __lake_query) AS __lake_matches "
        "ON TRUE WHEN MATCHED THEN DELETE"
    )


def test_a_subquery_that_reads_the_target_itself_is_not_correlated():
    assert rewritten("DELETE FROM t WHERE id IN (SELECT id FROM t WHERE t.age > 3)") == (
        "MERGE INTO t USING (SELECT DISTINCT * FROM (SELECT id FROM t WHERE t.age > 3) "
        f"AS __lake_query(__lake_key_0_0)) AS __lake_matches ON id = {KEY} "
        "WHEN MATCHED THEN DELETE"
    )


def test_several_subqueries_cross_their_distinct_keys():
    assert rewritten(
        "DELETE FROM t WHERE id IN (SELECT id FROM s) AND EXISTS (SELECT 1 FROM u WHERE u.n = t.n)"
    ) == (
        "MERGE INTO t USING (SELECT * FROM (SELECT DISTINCT * FROM (SELECT id FROM s) "
        "AS __lake_query(__lake_key_0_0)) AS __lake_part_0 CROSS JOIN "
        "(SELECT DISTINCT u.n AS __lake_key_1_0 FROM u) AS __lake_part_1) AS __lake_matches "
        f"ON id = {KEY} AND t.n = __lake_matches.__lake_key_1_0 WHEN MATCHED THEN DELETE"
    )


def test_the_given_statement_is_left_as_it_was():
    statement = sqlglot.parse_one("DELETE FROM t WHERE id IN (SELECT id FROM s)", read="spark")
    before = statement.sql("spark")
    subquery_merge(statement)
    assert statement.sql("spark") == before


SUBQUERY_SHAPES = (
    "DELETE FROM t: a subquery in WHERE is supported only as `… IN (SELECT …)`, EXISTS (…) or "
    "NOT EXISTS (…), ANDed with the other conditions — rewrite the condition that way, or write "
    "the statement as MERGE INTO … USING (SELECT …) s ON … WHEN MATCHED THEN UPDATE SET … | DELETE"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "DELETE FROM t WHERE id NOT IN (SELECT id FROM s)",
            "DELETE FROM t: NOT IN (SELECT …) is not supported (it is never true once the "
            "subquery returns a NULL) — write NOT EXISTS (SELECT … WHERE s.col = t.col), which "
            "passes over NULLs, or a MERGE … WHEN NOT MATCHED BY SOURCE",
        ),
        ("DELETE FROM t WHERE id = 1 OR id IN (SELECT id FROM s)", SUBQUERY_SHAPES),
        ("DELETE FROM t WHERE id = (SELECT max(id) FROM s)", SUBQUERY_SHAPES),
        ("DELETE FROM t WHERE NOT (id IN (SELECT id FROM s) AND age > 1)", SUBQUERY_SHAPES),
        ("DELETE FROM t WHERE id IN (1, (SELECT max(id) FROM s))", SUBQUERY_SHAPES),
        (
            "DELETE FROM t WHERE EXISTS (SELECT 1 FROM s WHERE s.v > t.v)",
            "DELETE FROM t: a subquery may refer to t only in equalities such as s.col = t.col, "
            "ANDed in its WHERE — move the other conditions on t out of the subquery, or write "
            "the statement as MERGE INTO … USING (SELECT …) s ON … "
            "WHEN MATCHED THEN UPDATE SET … | DELETE",
        ),
        (
            "UPDATE t SET v = 0 WHERE EXISTS (SELECT max(v) FROM s WHERE s.k = t.k)",
            "UPDATE t: a subquery that refers to t must be a plain SELECT … FROM … WHERE naming "
            "t only in its WHERE (no GROUP BY, aggregates or LIMIT) — select what it matches in "
            "a subquery that does not refer to t, or write the statement as MERGE INTO … USING "
            "(SELECT …) s ON … WHEN MATCHED THEN UPDATE SET … | DELETE",
        ),
        (
            "UPDATE t SET v = (SELECT max(v) FROM s)",
            "UPDATE t: subqueries in SET are not supported — compute the values in a MERGE: "
            "MERGE INTO … USING (SELECT …) s ON … WHEN MATCHED THEN UPDATE SET col = s.col",
        ),
        (
            "DELETE FROM t WHERE NOT EXISTS (SELECT 1 FROM s) AND id IN (SELECT id FROM u)",
            "DELETE FROM t: NOT EXISTS (…) must be the only subquery in WHERE — write the "
            "statement as MERGE INTO … USING (SELECT …) s ON … "
            "WHEN MATCHED THEN UPDATE SET … | DELETE",
        ),
    ],
)
def test_shapes_without_an_exact_merge_are_refused_in_one_line(text: str, expected: str):
    assert refusal(text) == expected


@pytest.mark.parametrize(
    "subquery",
    [
        "SELECT k FROM s WHERE s.k = t.k GROUP BY k",
        "SELECT k FROM s WHERE s.k = t.k LIMIT 1",
        "SELECT * FROM s WHERE s.k = t.k",
        "SELECT t.k FROM s WHERE s.k = t.k",
        "SELECT k FROM s JOIN u ON u.k = t.k",
        "SELECT k, v FROM s WHERE s.k = t.k",
    ],
)
def test_a_correlated_subquery_must_be_plain(subquery: str):
    assert refusal(f"DELETE FROM t WHERE k IN ({subquery})").startswith(
        "DELETE FROM t: a subquery that refers to t must be a plain SELECT"
    )
