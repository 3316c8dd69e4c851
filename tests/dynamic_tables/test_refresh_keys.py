"""Keys the analyses decide, proved on real Spark + Delta: a DISTINCT over groups keyed by the key
it selects, and sums and averages of distinct values recomputed by group, each holding what its
query returns after a change; an item without a name of its own keeps Spark's name for it."""

from __future__ import annotations

from lake_assets.session import LakeSession

QUERIES = {
    "distinct_groups": "SELECT DISTINCT a FROM t GROUP BY a, c",
    "distinct_sums": (
        "SELECT a, SUM(DISTINCT b) AS s, AVG(DISTINCT b) AS m, COUNT(*) AS n FROM t GROUP BY a"
    ),
}


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return sorted((tuple(row) for row in result.rows), key=str)


def test_each_table_holds_what_its_query_returns_after_a_change(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (a STRING, b INT, c INT);"
        "INSERT INTO t VALUES ('x', 1, 1), ('x', 1, 2), ('y', 2, 1), ('y', 3, 1), (NULL, 4, 1);"
        "CREATE DYNAMIC TABLE unnamed AS SELECT t.a, SUM(t.b) FROM t GROUP BY t.a "
        "HAVING SUM(t.b) > (SELECT AVG(u.b) FROM t u)"
    )
    (unnamed,) = lake.sql("SELECT * FROM unnamed")
    assert unnamed.columns == ["a", "sum(b)"]  # Spark's name for it: no stage renames it
    for name, query in QUERIES.items():
        lake.sql(f"CREATE DYNAMIC TABLE {name} REFRESH_MODE = INCREMENTAL AS {query}")
    # x gains a group of a new c and loses another, keeping its distinct b; y's distinct b
    # lose 3 and gain 5 (2 twice): a sum folded row by row would be 9, not 7.
    lake.sql(
        "INSERT INTO t VALUES ('x', 1, 3), ('y', 5, 2);"
        "DELETE FROM t WHERE a = 'x' AND c = 1;"
        "UPDATE t SET b = 2 WHERE a = 'y' AND b = 3"
    )
    for name, query in QUERIES.items():
        (refresh,) = lake.sql(f"REFRESH DYNAMIC TABLE {name}")
        assert refresh.message.startswith("REFRESH INCREMENTAL"), (name, refresh.message)
        assert rows(lake, f"SELECT * FROM {name}") == rows(lake, query), name
    assert rows(lake, "SELECT * FROM distinct_groups") == [("x",), ("y",), (None,)]
    assert rows(lake, "SELECT a, s, n FROM distinct_sums") == [
        ("x", 1, 2), ("y", 7, 3), (None, 4, 1),
    ]  # fmt: skip
