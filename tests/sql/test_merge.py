"""MERGE rewritten to the standard meaning: INSERT VALUES gets its columns, idle rows go."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp
from sqlglot.executor import execute

from lake_assets.core.errors import LakeError
from lake_assets.sql.merge import standard_merge

COLUMNS = ["id", "name", "age"]

# The consumer MERGE: a STANDARD stream's changes by change type, INSERT VALUES with no columns.
CONSUMER_MERGE = (
    "MERGE INTO test_table_offset_consume target USING test_table_offset_stream source_stream "
    "ON target.id = source_stream.id "
    "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' "
    "THEN update set target.age = source_stream.age "
    "WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
    "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' "
    "THEN INSERT VALUES (source_stream.id, source_stream.name, source_stream.age)"
)


def parse(text: str) -> exp.Merge:
    merge = sqlglot.parse_one(text, read="spark")
    assert isinstance(merge, exp.Merge)
    return merge


def rewritten(text: str, columns: list[str] = COLUMNS) -> str:
    return standard_merge(parse(text), columns).sql("spark")


def unchanged(text: str) -> str:
    return parse(text).sql("spark")


def test_the_consumer_merge_keeps_only_source_rows_some_clause_can_act_on():
    assert rewritten(CONSUMER_MERGE) == (
        "MERGE INTO test_table_offset_consume AS target USING "
        "(SELECT * FROM test_table_offset_stream AS source_stream "
        "WHERE source_stream.__change_type = 'UPDATE_AFTER' "
        "OR source_stream.__change_type = 'DELETE' "
        "OR source_stream.__change_type = 'INSERT') AS source_stream "
        "ON target.id = source_stream.id "
        "WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' "
        "THEN UPDATE SET target.age = source_stream.age "
        "WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE "
        "WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' "
        "THEN INSERT (id, name, age) "
        "VALUES (source_stream.id, source_stream.name, source_stream.age)"
    )


def test_the_given_merge_is_left_as_it_was():
    merge = parse(CONSUMER_MERGE)
    before = merge.sql("spark")
    standard_merge(merge, COLUMNS)
    assert merge.sql("spark") == before


def test_insert_values_without_columns_names_every_target_column_in_order():
    assert rewritten(
        "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.n, 1)"
    ) == (
        "MERGE INTO t USING s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, name, age) VALUES (s.id, s.n, 1)"
    )


def test_filled_column_names_are_quoted_when_they_need_it():
    assert rewritten(
        "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.n)",
        ["id", "full name"],
    ) == (
        "MERGE INTO t USING s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, `full name`) VALUES (s.id, s.n)"
    )


@pytest.mark.parametrize(
    "insert", ["INSERT *", "INSERT (id, age) VALUES (s.id, s.age)", "INSERT (id) VALUES (s.id)"]
)
def test_insert_star_and_insert_with_columns_are_unchanged(insert: str):
    text = f"MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN {insert}"
    assert rewritten(text) == unchanged(text)


@pytest.mark.parametrize(("values", "count"), [("s.id, s.name", 2), ("1, 2, 3, 4", 4)])
def test_insert_values_of_the_wrong_length_names_the_table_and_its_columns(values: str, count: int):
    with pytest.raises(LakeError) as raised:
        rewritten(
            f"MERGE INTO Target_T t USING s ON t.id = s.id "
            f"WHEN NOT MATCHED THEN INSERT VALUES ({values})"
        )
    assert raised.value.what == (
        f"INSERT VALUES in MERGE INTO Target_T gives {count} values for 3 columns (id, name, age)"
    )
    assert raised.value.fix == (
        "list one value per column of Target_T, or name the columns: INSERT (col, …) VALUES (…)"
    )
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "whens",
    [
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "WHEN MATCHED AND s.op = 'D' THEN DELETE WHEN NOT MATCHED THEN INSERT *",
        "WHEN MATCHED AND t.age > 3 THEN DELETE",
        "WHEN MATCHED AND s.op = 'D' AND t.age > 3 THEN DELETE",
        "WHEN MATCHED AND op = 'D' THEN DELETE",
        "WHEN MATCHED AND s.op = 'D' THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE",
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE AND t.age > 3 THEN DELETE",
        "WHEN MATCHED AND s.age > rand() THEN DELETE",
        "WHEN MATCHED AND s.id IN (SELECT s.id FROM other AS s) THEN DELETE",
    ],
)
def test_source_is_kept_whole_when_some_row_might_act_or_dropping_one_would_matter(whens: str):
    text = f"MERGE INTO t USING s ON t.id = s.id {whens}"
    assert rewritten(text) == unchanged(text)


def test_an_unaliased_schema_qualified_source_is_not_renamed():
    text = "MERGE INTO t USING db.s ON t.id = db.s.id WHEN MATCHED AND db.s.op = 'D' THEN DELETE"
    assert rewritten(text) == unchanged(text)


def test_an_unaliased_source_keeps_its_table_name_as_alias():
    assert rewritten(
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND S.op = 'D' THEN DELETE"
    ) == (
        "MERGE INTO t USING (SELECT * FROM s AS s WHERE S.op = 'D') AS s "
        "ON t.id = s.id WHEN MATCHED AND S.op = 'D' THEN DELETE"
    )


def test_a_subquery_source_is_wrapped_under_its_alias():
    assert rewritten(
        "MERGE INTO t USING (SELECT id, op FROM changes) AS c ON t.id = c.id "
        "WHEN MATCHED AND c.op = 'D' THEN DELETE"
    ) == (
        "MERGE INTO t USING (SELECT * FROM (SELECT id, op FROM changes) AS c "
        "WHERE c.op = 'D') AS c ON t.id = c.id WHEN MATCHED AND c.op = 'D' THEN DELETE"
    )


def test_a_values_source_keeps_its_column_names():
    assert rewritten(
        "MERGE INTO t USING (VALUES (1, 'D')) AS c(id, op) ON t.id = c.id "
        "WHEN MATCHED AND c.op = 'D' THEN DELETE"
    ) == (
        "MERGE INTO t USING (SELECT * FROM VALUES (1, 'D') AS c(id, op) "
        "WHERE c.op = 'D') AS c ON t.id = c.id WHEN MATCHED AND c.op = 'D' THEN DELETE"
    )


def test_each_clause_condition_stays_whole_inside_the_or():
    assert rewritten(
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.a = 1 OR s.b = 2 THEN DELETE "
        "WHEN NOT MATCHED AND s.c AND s.d THEN INSERT *"
    ) == (
        "MERGE INTO t USING (SELECT * FROM s AS s WHERE (s.a = 1 OR s.b = 2) OR (s.c AND s.d)) "
        "AS s ON t.id = s.id WHEN MATCHED AND s.a = 1 OR s.b = 2 THEN DELETE "
        "WHEN NOT MATCHED AND s.c AND s.d THEN INSERT *"
    )


# Conditions over the source's columns a and b, NULL included, as SQL text.
_OPERAND = st.sampled_from(["s.a", "s.b", "1", "2", "NULL"])
_ATOM = st.builds(
    lambda left, op, right: f"{left} {op} {right}",
    _OPERAND,
    st.sampled_from(["=", "<>", "<", ">="]),
    _OPERAND,
) | st.sampled_from(["s.a IS NULL", "s.b IS NOT NULL"])
_CONDITION = st.recursive(
    _ATOM,
    lambda inner: (
        st.builds(
            lambda left, op, right: f"({left} {op} {right})",
            inner,
            st.sampled_from(["AND", "OR"]),
            inner,
        )
        | inner.map(lambda condition: f"NOT ({condition})")
    ),
    max_leaves=4,
)
_SCHEMA = {"s": {"a": "INT", "b": "INT"}}
_VALUE = st.one_of(st.none(), st.integers(0, 2))
_ROWS = st.lists(st.fixed_dictionaries({"a": _VALUE, "b": _VALUE}), max_size=6)
_CLAUSE = st.tuples(
    st.sampled_from(
        [
            "WHEN MATCHED AND {} THEN DELETE",
            "WHEN MATCHED AND {} THEN UPDATE SET t.a = s.a",
            "WHEN NOT MATCHED AND {} THEN INSERT *",
        ]
    ),
    _CONDITION,
)


def _fires(condition: str, row: dict[str, int | None]) -> bool:
    """Whether a clause with this condition fires for the row: true, not false nor NULL."""
    result = execute(f"SELECT * FROM s AS s WHERE {condition}", schema=_SCHEMA, tables={"s": [row]})
    return len(result.rows) == 1


@settings(deadline=None, database=None)
@given(clauses=st.lists(_CLAUSE, min_size=1, max_size=3), rows=_ROWS)
def test_dropped_source_rows_are_exactly_those_no_clause_fires_for(
    clauses: list[tuple[str, str]], rows: list[dict[str, int | None]]
):
    whens = " ".join(template.format(condition) for template, condition in clauses)
    merge = standard_merge(parse(f"MERGE INTO t USING s ON t.a = s.a {whens}"), ["a", "b"])
    source = merge.args["using"]
    assert isinstance(source, exp.Subquery)
    assert source.alias == "s"
    kept = execute(source.this.sql(), schema=_SCHEMA, tables={"s": rows}).rows
    acting = [
        (row["a"], row["b"])
        for row in rows
        if any(_fires(condition, row) for _, condition in clauses)
    ]
    assert sorted(kept, key=repr) == sorted(acting, key=repr)
    assert merge.args["whens"] == parse(f"MERGE INTO t USING s ON t.a = s.a {whens}").args["whens"]
