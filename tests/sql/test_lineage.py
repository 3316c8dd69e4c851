"""Which columns of a table a query names, as ALTER TABLE asks before a rename or drop."""

from __future__ import annotations

import pytest

from lake_assets.sql.lineage import columns_read

COLUMNS = {"t": ["id", "a", "b", "c"], "u": ["id", "x"]}


@pytest.mark.parametrize(
    ("query", "read"),
    [
        ("SELECT a, SUM(b) AS s FROM t GROUP BY a", {"a", "b"}),
        ("SELECT * FROM t", {"id", "a", "b", "c"}),
        ("SELECT t.a, u.x FROM t JOIN u ON t.id = u.id", {"a", "id"}),
        ("SELECT a FROM (SELECT a, b FROM t WHERE c > 1)", {"a", "b", "c"}),
        ("SELECT x FROM u WHERE id IN (SELECT id FROM t)", {"id"}),
        ("SELECT x FROM u", set()),
        ("SELECT COUNT(*) AS n FROM t", set()),
        # ambiguous: `a` of which t? The safe answer is every column.
        ("SELECT a FROM t t1 JOIN t t2 USING (id)", {"id", "a", "b", "c"}),
    ],
)
def test_the_columns_a_query_reads_of_a_table(query: str, read: set[str]):
    assert columns_read(query, "t", COLUMNS.__getitem__) == read
