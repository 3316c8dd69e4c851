"""Which columns a SELECT's conditions equate between two of its tables (analyses.equalities):
only equalities every row must meet, of a column of each table."""

from __future__ import annotations

import pytest
import sqlglot

from lake_assets.dynamic_tables.analyses.equalities import equated


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM o JOIN l ON o.k = l.k", [("k", "k")]),
        ("SELECT * FROM o JOIN l ON l.ok <=> o.k", [("k", "ok")]),
        ("SELECT * FROM o, l WHERE o.k = l.k AND o.d = l.d", [("k", "k"), ("d", "d")]),
        (
            "SELECT * FROM o JOIN l ON o.k = l.k AND l.x > 1 WHERE o.d = l.d",
            [("d", "d"), ("k", "k")],
        ),
        ("SELECT * FROM o JOIN l ON o.k = l.k OR o.d = l.d", []),
        ("SELECT * FROM o JOIN l ON o.k = l.k + 1", []),
        ("SELECT * FROM o JOIN l ON o.k > l.k", []),
        ("SELECT * FROM o JOIN c ON o.c = c.c JOIN l ON c.k = l.k", []),
    ],
)
def test_equalities_between_two_tables(sql: str, expected: list[tuple[str, str]]) -> None:
    select = sqlglot.parse_one(sql, read="spark")
    assert isinstance(select, sqlglot.exp.Select)
    assert equated(select, "o", "l") == expected
