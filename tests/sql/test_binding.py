"""Binding catalog table names to Delta locations in Spark SQL statements."""

from __future__ import annotations

import pytest
from sqlglot import exp

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.sql.binding import bind_tables, referenced_tables


def expression(text: str) -> exp.Expression:
    return parse_statement(text).expression


def locate(name: str) -> str:
    return f"/lake/warehouse/{name}-0001"


def bound(text: str) -> str:
    return bind_tables(expression(text), locate)


def test_select_binds_the_table_and_aliases_it_with_its_name():
    assert bound("SELECT t.a FROM t") == "SELECT t.a FROM delta.`/lake/warehouse/t-0001` AS t"


def test_join_binds_every_table_and_keeps_qualifiers():
    assert bound("SELECT s.id, c.name FROM sales s JOIN customers AS c ON s.cid = c.id") == (
        "SELECT s.id, c.name FROM delta.`/lake/warehouse/sales-0001` AS s "
        "JOIN delta.`/lake/warehouse/customers-0001` AS c ON s.cid = c.id"
    )


def test_unaliased_tables_are_aliased_with_their_lower_cased_name():
    assert bound("SELECT Sales.id FROM Sales") == (
        "SELECT Sales.id FROM delta.`/lake/warehouse/sales-0001` AS sales"
    )


def test_a_name_that_needs_quotes_is_aliased_with_quotes():
    assert bound("SELECT * FROM `My Sales`") == (
        "SELECT * FROM delta.`/lake/warehouse/my sales-0001` AS `my sales`"
    )


def test_locate_is_called_with_lower_cased_names():
    asked: list[str] = []

    def record(name: str) -> str:
        asked.append(name)
        return f"/w/{name}"

    bind_tables(expression("SELECT * FROM Sales JOIN ORDERS ON Sales.id = ORDERS.id"), record)
    assert asked == ["sales", "orders"]


def test_insert_target_is_bound_without_an_alias():
    assert bound("INSERT INTO t SELECT * FROM s") == (
        "INSERT INTO delta.`/lake/warehouse/t-0001` "
        "SELECT * FROM delta.`/lake/warehouse/s-0001` AS s"
    )


def test_insert_target_with_a_column_list_is_bound_without_an_alias():
    assert bound("INSERT INTO t (a, b) SELECT a, b FROM s") == (
        "INSERT INTO delta.`/lake/warehouse/t-0001` (a, b) "
        "SELECT a, b FROM delta.`/lake/warehouse/s-0001` AS s"
    )


def test_insert_values_binds_only_the_target():
    assert bound("INSERT INTO t VALUES (1, 'a')") == (
        "INSERT INTO delta.`/lake/warehouse/t-0001` VALUES (1, 'a')"
    )


def test_insert_from_the_same_table_aliases_only_the_source():
    assert bound("INSERT INTO t SELECT * FROM t") == (
        "INSERT INTO delta.`/lake/warehouse/t-0001` "
        "SELECT * FROM delta.`/lake/warehouse/t-0001` AS t"
    )


def test_update_target_is_aliased_so_qualified_columns_work():
    assert bound("UPDATE t SET t.a = 1 WHERE t.b = 2") == (
        "UPDATE delta.`/lake/warehouse/t-0001` AS t SET t.a = 1 WHERE t.b = 2"
    )


def test_delete_binds_the_target_and_subquery_tables():
    assert bound("DELETE FROM t WHERE a IN (SELECT a FROM s)") == (
        "DELETE FROM delta.`/lake/warehouse/t-0001` AS t "
        "WHERE a IN (SELECT a FROM delta.`/lake/warehouse/s-0001` AS s)"
    )


def test_merge_binds_target_and_source_with_their_names():
    assert bound("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = s.v") == (
        "MERGE INTO delta.`/lake/warehouse/t-0001` AS t "
        "USING delta.`/lake/warehouse/s-0001` AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.v = s.v"
    )


def test_cte_names_are_not_bound_but_tables_inside_them_are():
    assert bound("WITH recent AS (SELECT * FROM sales) SELECT * FROM recent") == (
        "WITH recent AS (SELECT * FROM delta.`/lake/warehouse/sales-0001` AS sales) "
        "SELECT * FROM recent"
    )


def test_cte_names_match_case_insensitively():
    assert bound("WITH Recent AS (SELECT 1 AS a) SELECT * FROM RECENT") == (
        "WITH Recent AS (SELECT 1 AS a) SELECT * FROM RECENT"
    )


def test_union_all_binds_both_sides():
    assert bound("SELECT a FROM t UNION ALL SELECT a FROM u") == (
        "SELECT a FROM delta.`/lake/warehouse/t-0001` AS t "
        "UNION ALL SELECT a FROM delta.`/lake/warehouse/u-0001` AS u"
    )


def test_table_functions_are_left_alone():
    assert bound("SELECT * FROM range(3)") == "SELECT * FROM RANGE(3)"


def test_binding_does_not_change_the_parsed_expression():
    parsed = expression("SELECT * FROM t")
    bind_tables(parsed, locate)
    assert parsed.sql(dialect="spark") == "SELECT * FROM t"


def test_referenced_tables_lists_each_table_once_in_order():
    text = (
        "INSERT INTO totals SELECT s.cat, SUM(s.amount) FROM sales s "
        "JOIN Sales AS again ON s.id = again.id JOIN cats ON s.cat = cats.cat GROUP BY s.cat"
    )
    assert referenced_tables(expression(text)) == ["totals", "sales", "cats"]


def test_referenced_tables_skips_ctes():
    text = "WITH c AS (SELECT * FROM sales) SELECT * FROM c JOIN products p ON c.pid = p.id"
    # Compared as a set: the order is breadth-first, not textual.
    assert sorted(referenced_tables(expression(text))) == ["products", "sales"]


def test_referenced_tables_of_a_query_without_tables_is_empty():
    assert referenced_tables(expression("SELECT 1 + 1")) == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("SELECT * FROM analytics.sales", "analytics.sales"),
        ("INSERT INTO db.t SELECT 1", "db.t"),
        ("SELECT * FROM t JOIN c.db.u ON t.id = u.id", "c.db.u"),
    ],
)
def test_schema_qualified_tables_are_refused(text, shown):
    for check in (referenced_tables, lambda e: bind_tables(e, locate)):
        with pytest.raises(LakeError) as caught:
            check(expression(text))
        assert caught.value.what == f"'{shown}' names a schema, and schemas are not supported yet"
        assert caught.value.fix == "use the table's bare name: every object lives in one schema"


def test_a_stream_query_replaces_the_relation_but_no_literal_or_comment():
    text = "SELECT '__lake_query_s' AS tag, a /* __lake_query_s */ FROM s"
    queries = {"s": "SELECT 1 AS a"}
    assert bind_tables(expression(text), locate, queries=queries) == (
        "SELECT '__lake_query_s' AS tag, a /* __lake_query_s */ FROM (SELECT 1 AS a) AS s"
    )
