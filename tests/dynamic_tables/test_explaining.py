"""EXPLAIN [CREATE] DYNAMIC TABLE: the operator tree with each operator's rule, or why FULL."""

from __future__ import annotations

import pytest

from lake_assets.dynamic_tables.explaining import explain
from lake_assets.dynamic_tables.grammar import ExplainDynamicTable
from lake_assets.dynamic_tables.operators.aggregate import Aggregate
from lake_assets.kinds import parse_statement

AUTO = (
    "INCREMENTAL (AUTO: FULL when, on sources of 100,000 rows or more, the rows changed reach 20% "
    "of theirs or applying the changes reads as many rows as recomputing)"
)
JOIN = (
    "Δ(A ⋈ B) = ΔA ⋈ B now + A as last read ⋈ ΔB; a side of 100,000 rows or more is read only "
    "where its join key lies in the ranges of the change's"
)
SCAN = "reads its change data feed from the version the last refresh read to now"
SEMI_RULE = (
    "the rows of the join keys the changed source rows hold (each from its own column), "
    "now less as last read; a table of 100,000 rows or more is read only where its key column "
    "lies in the ranges of those keys"
)


def explained(sql: str, columns: dict[str, list[str]] | None = None) -> list[tuple[str, str]]:
    statement = parse_statement(sql)
    assert isinstance(statement, ExplainDynamicTable)
    assert statement.create is not None
    create = statement.create
    result = explain(create.query.expression, create.refresh_mode, columns or {})
    assert result.columns == ["operator", "refresh"]
    return [tuple(row) for row in result.rows]


def test_an_incremental_query_lists_each_operator_with_its_rule() -> None:
    assert explained(
        "EXPLAIN CREATE DYNAMIC TABLE s AS SELECT u.x, COUNT(*) AS n, MIN(t.c) AS lo "
        "FROM t JOIN u ON t.k = u.k WHERE t.b > 0 GROUP BY u.x ORDER BY n"
    ) == [
        ("dynamic table", AUTO),
        ("note", "ORDER BY is ignored: a table's rows have no order; sort when you query it"),
        ("Aggregate GROUP BY u.x", "groups touched by the change"),
        ("  agg COUNT(*)", "folded into the group's hidden state"),
        ("  agg MIN(t.c)", "folded; a group whose extreme was deleted is recomputed"),
        ("  Filter t.b > 0", "applied to the changed rows alone"),
        ("    Inner join", JOIN),
        ("      Scan t", SCAN),
        ("      Scan u", SCAN),
    ]  # fmt: skip


def test_what_forces_full_is_named_and_every_operator_recomputed() -> None:
    assert explained(
        "EXPLAIN CREATE DYNAMIC TABLE r AS SELECT a, RANK() OVER (ORDER BY c) AS r FROM t"
    ) == [
        ("dynamic table", "FULL: window functions are refreshed in full"),
        ("Project a, RANK() OVER (ORDER BY c) AS r", "recomputed"),
        ("  Scan t", "recomputed"),
    ]
    union = explained(
        "EXPLAIN CREATE OR REPLACE DYNAMIC TABLE u REFRESH_MODE = FULL AS "
        "SELECT a FROM t UNION ALL SELECT b FROM v"
    )
    assert union[:2] == [
        ("dynamic table", "FULL: REFRESH_MODE = FULL"),
        ("UNION ALL", "recomputed"),
    ]


def test_a_set_operation_is_recomputed_by_row_through_its_branches() -> None:
    rows = explained(
        "EXPLAIN CREATE DYNAMIC TABLE s AS SELECT a FROM t UNION ALL SELECT b FROM v "
        "EXCEPT (SELECT a FROM t INTERSECT SELECT b FROM v)"
    )
    assert [operator for operator, _ in rows[1:]] == [
        "Recompute by row (all columns)",
        "  EXCEPT",
        "    UNION ALL",
        "      Project a",
        "        Scan t",
        "      Project b",
        "        Scan v",
        "    INTERSECT",
        "      Project a",
        "        Scan t",
        "      Project b",
        "        Scan v",
    ]
    assert (
        rows[2][1]
        == rows[8][1]
        == ("recomputed for the rows the change touches, from each branch's rows of them")
    )
    assert rows[3][1] == "each branch's changes, added up"


def test_a_lateral_view_is_applied_row_by_row_between_its_filter_and_its_scan() -> None:
    assert explained(
        "EXPLAIN CREATE DYNAMIC TABLE x AS SELECT a, i FROM t "
        "LATERAL VIEW OUTER explode(sequence(1, c)) e AS i WHERE i > 1"
    )[1:] == [
        ("Project a, i", "applied to the changed rows alone"),
        ("  Filter i > 1", "applied to the changed rows alone"),
        (
            "    LATERAL VIEW OUTER EXPLODE(SEQUENCE(1, c)) e AS i",
            "applied to the changed rows alone",
        ),
        (
            "      Scan t",
            "reads its change data feed from the version the last refresh read to now",
        ),
    ]


def test_explain_of_an_existing_dynamic_table_parses() -> None:
    assert parse_statement("EXPLAIN DYNAMIC TABLE Sales_Summary") == ExplainDynamicTable(
        "sales_summary"
    )
    assert explained("EXPLAIN CREATE DYNAMIC TABLE d AS SELECT a FROM t")[0] == (
        "dynamic table", AUTO,
    )  # fmt: skip


def test_a_keyed_query_names_its_key() -> None:
    rows = explained(
        "EXPLAIN CREATE DYNAMIC TABLE latest AS SELECT id, cat FROM src "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY cat ORDER BY id DESC) = 1"
    )
    assert [operator for operator, _ in rows] == [
        "dynamic table", "Recompute by key cat", "  QUALIFY + windows", "    Scan src",
    ]  # fmt: skip
    assert rows[1][1].startswith("the keys of the rows the change gains or loses")


def test_unqualified_subqueries_are_qualified_by_the_sources_columns_and_run_as_joins() -> None:
    """The sources' columns say which table an unqualified name is (the subquery's own first):
    EXISTS becomes a semi join on the key it correlates by."""
    rows = explained(
        "EXPLAIN CREATE DYNAMIC TABLE d AS SELECT o_priority, COUNT(*) AS n FROM orders "
        "WHERE o_date >= DATE '1993-07-01' AND EXISTS (SELECT * FROM lineitem "
        "WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_priority",
        {
            "orders": ["o_orderkey", "o_priority", "o_date"],
            "lineitem": ["l_orderkey", "l_commitdate", "l_receiptdate"],
        },
    )
    assert rows[0][1].startswith("INCREMENTAL")
    assert ("    LEFT SEMI JOIN on orders.o_orderkey", SEMI_RULE) in rows
    unknown = explained(
        "EXPLAIN CREATE DYNAMIC TABLE d AS SELECT o_priority FROM orders "
        "WHERE EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey)"
    )
    assert unknown[0][1].startswith("FULL: subqueries")  # without the columns: either side's


def test_an_uncorrelated_scalar_subquery_is_shown_as_a_parameter_of_the_filter() -> None:
    rows = explained(
        "EXPLAIN CREATE DYNAMIC TABLE d AS SELECT c.region, COUNT(*) AS n FROM c "
        "WHERE c.bal > (SELECT AVG(c2.bal) FROM c c2) AND NOT EXISTS "
        "(SELECT * FROM o WHERE o.k = c.k) GROUP BY c.region"
    )
    assert rows[0][1].startswith("INCREMENTAL")
    (parameter,) = [(operator, rule) for operator, rule in rows if "Parameter" in operator]
    assert parameter[0].strip() == "Parameter (SELECT AVG(c2.bal) FROM c AS c2)"
    assert parameter[1].startswith("one value for every row, read now and as last read")


def test_explain_prints_the_operators_the_refresh_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """EXPLAIN has no text of its own for an operator: each line is the operator's, so a rule
    changed in the operator is changed in EXPLAIN."""
    sql = "EXPLAIN CREATE DYNAMIC TABLE s AS SELECT a, COUNT(*) AS n FROM t GROUP BY a"
    assert explained(sql)[1] == ("Aggregate GROUP BY a", "groups touched by the change")
    monkeypatch.setattr(Aggregate, "rule", property(lambda _: "a rule of its own"))
    assert explained(sql)[1] == ("Aggregate GROUP BY a", "a rule of its own")


def test_a_large_table_joined_by_a_key_it_is_not_clustered_by_gets_a_note() -> None:
    """The note names the key the change's ranges restrict and the statements that lay the
    table out by it; a table clustered by a join key, or not large, gets none."""
    sql = (
        "EXPLAIN CREATE DYNAMIC TABLE s AS SELECT o.region, SUM(l.price) AS total "
        "FROM lineitem l JOIN orders o ON l.orderkey = o.orderkey GROUP BY o.region"
    )
    statement = parse_statement(sql)
    assert isinstance(statement, ExplainDynamicTable)
    assert statement.create is not None
    create = statement.create

    def notes(layouts: dict[str, tuple[str, ...]]) -> list[str]:
        result = explain(create.query.expression, create.refresh_mode, {}, layouts)
        return [rule for operator, rule in result.rows if operator == "note"]

    assert notes({"lineitem": ("shipdate",), "orders": ("orderkey",)}) == [
        "lineitem is read where orderkey lies in the ranges of the change joined to it, but its "
        "files are not laid out by orderkey, so every file is read: ALTER TABLE lineitem CLUSTER "
        "BY (orderkey), then OPTIMIZE lineitem FULL"
    ]
    (note,) = notes({"lineitem": ("ORDERKEY", "shipdate"), "orders": ()})
    assert note.startswith("orders is read where orderkey")
    assert note.endswith("ALTER TABLE orders CLUSTER BY (orderkey), then OPTIMIZE orders")
    assert notes({}) == []


def test_a_large_table_a_semi_join_reads_by_its_key_gets_the_note_too() -> None:
    """TPC-H Q4's shape: a keyed join reads each table by its key column in the ranges of the
    keys a change touches."""
    statement = parse_statement(
        "EXPLAIN CREATE DYNAMIC TABLE d AS SELECT o_priority, COUNT(*) AS n FROM orders "
        "WHERE EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey) GROUP BY o_priority"
    )
    assert isinstance(statement, ExplainDynamicTable)
    assert statement.create is not None
    columns = {"orders": ["o_orderkey", "o_priority"], "lineitem": ["l_orderkey"]}
    result = explain(
        statement.create.query.expression,
        statement.create.refresh_mode,
        columns,
        {"lineitem": ("l_shipdate",), "orders": ("o_orderkey",)},
    )
    assert [rule for operator, rule in result.rows if operator == "note"] == [
        "lineitem is read where l_orderkey lies in the ranges of the change joined to it, but its "
        "files are not laid out by l_orderkey, so every file is read: ALTER TABLE lineitem "
        "CLUSTER BY (l_orderkey), then OPTIMIZE lineitem FULL"
    ]
