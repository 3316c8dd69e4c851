"""The aggregates a SELECT list folds group by group: its keys, its aggregates with the hidden
state columns each keeps, the items computed from aggregates, and why a grouping or an item
cannot be folded."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.folds import (
    AVG,
    COUNT,
    COUNT_DISTINCT,
    COUNT_STAR,
    MAX,
    MIN,
    SUM,
    Aggregate,
    group_by_problem,
    grouping_problem,
    is_aggregate,
    select_list,
)

ROLLUP = (
    "ROLLUP, CUBE and GROUPING SETS are refreshed in full unless each grouping set's groups can "
    "be kept in a stage (no DISTINCT, window or subquery, and every computed item named with AS)"
)


def select(sql: str) -> exp.Select:
    parsed = sqlglot.parse_one(sql, read="spark")
    assert isinstance(parsed, exp.Select)
    return parsed


def items(sql: str) -> list[exp.Expr]:
    return [item.unalias() for item in select(sql).expressions]


def listed(
    sql: str,
) -> tuple[list[tuple[int, exp.Expr]], list[Aggregate], list[tuple[int, exp.Expr]]]:
    found = select_list(items(sql))
    assert not isinstance(found, str), found
    return found


def described(aggregate: Aggregate) -> str:
    """`KIND argument @position/slot`, with `in expression` when it is one aggregate of several."""
    argument = aggregate.argument.sql(dialect="spark") if aggregate.argument is not None else ""
    inside = " in expression" if aggregate.in_expression else ""
    named = f"{aggregate.kind} {argument}".strip()
    return f"{named} @{aggregate.position}/{aggregate.slot}{inside}"


@pytest.mark.parametrize(
    ("sql", "keys", "aggregates", "expressions"),
    [
        (
            "SELECT a, COUNT(*) AS n, SUM(b) AS s, AVG(c) AS m, MAX(d) AS x, MIN(e) AS y, "
            "COUNT(f) AS g, COUNT(DISTINCT h) AS d FROM t GROUP BY a",
            [(0, "a")],
            [
                "COUNT(*) @1/1", "SUM b @2/2", "AVG c @3/3", "MAX d @4/4", "MIN e @5/5",
                "COUNT f @6/6", "COUNT(DISTINCT) h @7/7",
            ],
            [],
        ),
        ("SELECT COUNT(*) AS n, a FROM t GROUP BY a", [(1, "a")], ["COUNT(*) @0/0"], []),
        ("SELECT COUNT(*) AS n FROM t", [], ["COUNT(*) @0/0"], []),
        ("SELECT a, b FROM t", [(0, "a"), (1, "b")], [], []),
        ("SELECT a + 1, COUNT(*) FROM t GROUP BY a + 1", [(0, "a + 1")], ["COUNT(*) @1/1"], []),
        ("SELECT a, SUM(b * c) AS s FROM t GROUP BY a", [(0, "a")], ["SUM b * c @1/1"], []),
        # an item that computes with aggregates: each folded in a value column of its own
        (
            "SELECT a, 2 * MAX(b) + AVG(c) AS m FROM t GROUP BY a",
            [(0, "a")],
            ["MAX b @1/1_0 in expression", "AVG c @1/1_1 in expression"],
            [(1, "2 * `__lake_v_1_0` + `__lake_v_1_1`")],
        ),
        (
            "SELECT a, SUM(b) / COUNT(*) AS r FROM t GROUP BY a",
            [(0, "a")],
            ["SUM b @1/1_0 in expression", "COUNT(*) @1/1_1 in expression"],
            [(1, "`__lake_v_1_0` / `__lake_v_1_1`")],
        ),
        (
            "SELECT a, COALESCE(SUM(b), 0) AS s FROM t GROUP BY a",
            [(0, "a")],
            ["SUM b @1/1_0 in expression"],
            [(1, "COALESCE(`__lake_v_1_0`, 0)")],
        ),
        (
            "SELECT a, MAX(b) - MIN(b) AS r, COUNT(*) AS n FROM t GROUP BY a",
            [(0, "a")],
            ["MAX b @1/1_0 in expression", "MIN b @1/1_1 in expression", "COUNT(*) @2/2"],
            [(1, "`__lake_v_1_0` - `__lake_v_1_1`")],
        ),
        (
            "SELECT a, 100.0 * SUM(CASE WHEN a > 1 THEN b ELSE 0 END) / SUM(b) AS p "
            "FROM t GROUP BY a",
            [(0, "a")],
            [
                "SUM CASE WHEN a > 1 THEN b ELSE 0 END @1/1_0 in expression",
                "SUM b @1/1_1 in expression",
            ],
            [(1, "100.0 * `__lake_v_1_0` / `__lake_v_1_1`")],
        ),
    ],
)  # fmt: skip
def test_the_keys_aggregates_and_expressions_of_a_select_list(
    sql: str, keys: list[tuple[int, str]], aggregates: list[str], expressions: list[tuple[int, str]]
) -> None:
    found_keys, found_aggregates, found_expressions = listed(sql)
    assert [(p, e.sql(dialect="spark")) for p, e in found_keys] == keys
    assert [described(a) for a in found_aggregates] == aggregates
    assert [(p, e.sql(dialect="spark")) for p, e in found_expressions] == expressions


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT a, STDDEV(b) FROM t GROUP BY a", "aggregate STDDEV(b) is refreshed in full"),
        ("SELECT a, 1 + STDDEV(b) FROM t GROUP BY a", "aggregate STDDEV(b) is refreshed in full"),
        ("SELECT a, SUM(SUM(b)) FROM t GROUP BY a", "aggregate SUM(SUM(b)) is refreshed in full"),
        ("SELECT a, MAX(b, c) FROM t GROUP BY a", "aggregate GREATEST(b, c) is refreshed in full"),
        (
            "SELECT a, COUNT(DISTINCT b, c) FROM t GROUP BY a",
            "COUNT(DISTINCT …) of several columns is refreshed in full",
        ),
        (
            "SELECT a, SUM(b) FILTER (WHERE b > 0) FROM t GROUP BY a",
            "the select item SUM(b) FILTER(WHERE b > 0) is refreshed in full",
        ),
        # an item mixing aggregates with a column, a window or a subquery
        (
            "SELECT a, a || COUNT(*) AS n FROM t GROUP BY a",
            "the select item a || COUNT(*) is refreshed in full",
        ),
        (
            "SELECT a, SUM(b) OVER (PARTITION BY a) FROM t GROUP BY a",
            "the select item SUM(b) OVER (PARTITION BY a) is refreshed in full",
        ),
        (
            "SELECT a, COUNT(*) + (SELECT 1) FROM t GROUP BY a",
            "the select item COUNT(*) + (SELECT 1) is refreshed in full",
        ),
        ("SELECT * FROM t GROUP BY a", "the select item * is refreshed in full"),
    ],
)  # fmt: skip
def test_an_item_that_cannot_be_folded_says_why(sql: str, reason: str) -> None:
    assert select_list(items(sql)) == reason


@pytest.mark.parametrize(
    "call", ["SUM(DISTINCT b)", "AVG(DISTINCT b)", "2 * SUM(DISTINCT b)", "MIN(DISTINCT b, c)"]
)
def test_an_aggregate_of_distinct_values_is_not_folded_as_the_plain_one(call: str) -> None:
    """Whether a lost row takes its value out of a sum of distinct values depends on the other
    rows of that value, which the change does not hold."""
    found = select_list(items(f"SELECT a, {call} AS s FROM t GROUP BY a"))
    assert found == f"aggregate {call.removeprefix('2 * ')} is refreshed in full"


@pytest.mark.parametrize(("call", "kind"), [("MIN(DISTINCT b)", MIN), ("MAX(DISTINCT b)", MAX)])
def test_the_extremes_of_distinct_values_fold_as_the_extremes_of_all(call: str, kind: str) -> None:
    (aggregate,) = listed(f"SELECT a, {call} AS x FROM t GROUP BY a")[1]
    assert (aggregate.kind, described(aggregate)) == (kind, f"{kind} b @1/1")
    assert aggregate.call.sql(dialect="spark") == call


@pytest.mark.parametrize(
    ("call", "kind", "hidden"),
    [
        ("COUNT(*)", COUNT_STAR, []),
        ("COUNT(b)", COUNT, []),
        ("COUNT(DISTINCT b)", COUNT_DISTINCT, []),
        ("MIN(b)", MIN, []),
        ("MAX(b)", MAX, []),
        # SUM and AVG keep how many non-NULL arguments the group has; AVG its SUM too
        ("SUM(b)", SUM, [("__lake_nn_1", "COUNT(b)")]),
        ("AVG(b)", AVG, [("__lake_nn_1", "COUNT(b)"), ("__lake_sum_1", "SUM(b)")]),
        ("SUM(b + c)", SUM, [("__lake_nn_1", "COUNT(b + c)")]),
    ],
)
def test_the_hidden_state_columns_each_aggregate_keeps(
    call: str, kind: str, hidden: list[tuple[str, str]]
) -> None:
    (aggregate,) = listed(f"SELECT a, {call} AS x FROM t GROUP BY a")[1]
    assert aggregate.kind == kind
    assert [(name, e.sql(dialect="spark")) for name, e in aggregate.hidden()] == hidden


@pytest.mark.parametrize(
    ("item", "hidden"),
    [
        # inside an expression: its own value first, then what its kind keeps
        ("2 * COUNT(*)", [("__lake_v_1_0", "COUNT(*)")]),
        ("MAX(b) + 1", [("__lake_v_1_0", "MAX(b)")]),
        ("SUM(b) / 2", [("__lake_v_1_0", "SUM(b)"), ("__lake_nn_1_0", "COUNT(b)")]),
        (
            "AVG(b) * 2",
            [
                ("__lake_v_1_0", "AVG(b)"),
                ("__lake_nn_1_0", "COUNT(b)"),
                ("__lake_sum_1_0", "SUM(b)"),
            ],
        ),
    ],
)
def test_an_aggregate_inside_an_expression_keeps_its_value(
    item: str, hidden: list[tuple[str, str]]
) -> None:
    (aggregate,) = listed(f"SELECT a, {item} AS x FROM t GROUP BY a")[1]
    assert aggregate.value == hidden[0][0]
    assert [(name, e.sql(dialect="spark")) for name, e in aggregate.hidden()] == hidden


def test_each_aggregate_names_its_state_columns_by_its_slot() -> None:
    first, second = listed("SELECT a, SUM(b) AS s, MAX(b) - AVG(c) AS r FROM t GROUP BY a")[1][1:]
    assert (first.nn, first.sum, first.value) == ("__lake_nn_2_0", "__lake_sum_2_0", "__lake_v_2_0")
    assert (second.nn, second.sum, second.value) == (
        "__lake_nn_2_1",
        "__lake_sum_2_1",
        "__lake_v_2_1",
    )
    (plain,) = listed("SELECT SUM(b) AS s FROM t")[1]
    assert (plain.nn, plain.sum, plain.value) == ("__lake_nn_0", "__lake_sum_0", None)


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT a, COUNT(*) FROM t GROUP BY a", None),
        ("SELECT COUNT(*) FROM t", None),
        ("SELECT a, COUNT(*) FROM t GROUP BY a, b", None),
        ("SELECT a, COUNT(*) FROM t GROUP BY ROLLUP (a)", ROLLUP),
        ("SELECT a, COUNT(*) FROM t GROUP BY CUBE (a)", ROLLUP),
        ("SELECT a, COUNT(*) FROM t GROUP BY GROUPING SETS ((a), ())", ROLLUP),
        ("SELECT a, COUNT(*) FROM t GROUP BY a WITH ROLLUP", ROLLUP),
        ("SELECT a, COUNT(*) FROM t GROUP BY a WITH CUBE", ROLLUP),
        ("SELECT a, COUNT(*) FROM t GROUP BY a, ROLLUP (b)", ROLLUP),
    ],
)
def test_every_result_row_must_be_one_group(sql: str, problem: str | None) -> None:
    assert grouping_problem(select(sql).args.get("group")) == problem


def test_a_grouping_without_expressions_is_refreshed_in_full() -> None:
    assert grouping_problem(exp.Group(expressions=[])) == "GROUP BY () is refreshed in full"
    parsed = select("SELECT COUNT(*) AS n FROM t GROUP BY ()").args["group"]
    assert grouping_problem(parsed) == "GROUP BY () is refreshed in full"


def test_group_by_all_says_so() -> None:
    assert grouping_problem(select("SELECT a, SUM(b) AS s FROM t GROUP BY ALL").args["group"]) == (
        "GROUP BY ALL is refreshed in full: list the grouping expressions instead"
    )


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT a, COUNT(*) FROM t GROUP BY a", None),
        ("SELECT a, COUNT(*) FROM t GROUP BY 1", None),
        ("SELECT upper(a) AS k, COUNT(*) FROM t GROUP BY k", None),
        ("SELECT upper(a) AS k, COUNT(*) FROM t GROUP BY upper(a)", None),
        ("SELECT a + 1, COUNT(*) FROM t GROUP BY a + 1", None),
        ("SELECT t.a, COUNT(*) FROM t GROUP BY t.a", None),
        ("SELECT t.a, COUNT(*) FROM t GROUP BY a", None),
        ("SELECT a, COUNT(*) FROM t GROUP BY a WITH ROLLUP", None),
        ("SELECT a FROM t GROUP BY a", None),
        # each GROUP BY expression must be a selected key
        (
            "SELECT a, COUNT(*) FROM t GROUP BY a, b",
            "GROUP BY b is not in the select list, so the table is refreshed in full",
        ),
        (
            "SELECT a, COUNT(*) FROM t GROUP BY t.a",
            "GROUP BY t.a is not in the select list, so the table is refreshed in full",
        ),
        (  # the ordinal of an aggregate
            "SELECT a, COUNT(*) FROM t GROUP BY 2",
            "GROUP BY 2 is not in the select list, so the table is refreshed in full",
        ),
        (
            "SELECT a, COUNT(*) FROM t GROUP BY 3",
            "GROUP BY 3 is not in the select list, so the table is refreshed in full",
        ),
        (
            "SELECT a, COUNT(*) FROM t GROUP BY ()",
            "GROUP BY () is not in the select list, so the table is refreshed in full",
        ),
        (
            "SELECT a, COUNT(*) FROM t GROUP BY ROLLUP (a)",
            "GROUP BY ROLLUP (a) is not in the select list, so the table is refreshed in full",
        ),
        # and each selected key one GROUP BY expression
        (
            "SELECT a, b, COUNT(*) FROM t GROUP BY a",
            "every selected column must be a GROUP BY expression or an aggregate",
        ),
        (
            "SELECT a, a, COUNT(*) FROM t GROUP BY a",
            "every selected column must be a GROUP BY expression or an aggregate",
        ),
    ],
)
def test_the_groups_are_matched_to_the_table_s_rows_by_the_selected_keys(
    sql: str, problem: str | None
) -> None:
    query = select(sql)
    listed_items = [item.unalias() for item in query.expressions]
    found = select_list(listed_items)
    assert not isinstance(found, str), found
    assert group_by_problem(query, listed_items, found[0]) == problem


@pytest.mark.parametrize(
    ("sql", "aggregate"),
    [
        ("SELECT a, COUNT(*) FROM t GROUP BY a", True),
        ("SELECT a FROM t GROUP BY a", True),
        ("SELECT COUNT(*) FROM t", True),
        ("SELECT 2 * SUM(b) AS s FROM t", True),
        ("SELECT a FROM t", False),
        ("SELECT a, ROW_NUMBER() OVER (ORDER BY a) AS r FROM t", False),
    ],
)
def test_a_select_is_an_aggregate_when_it_groups_or_selects_an_aggregate(
    sql: str, aggregate: bool
) -> None:
    assert is_aggregate(select(sql)) is aggregate
