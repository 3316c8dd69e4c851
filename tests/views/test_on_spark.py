"""Views on real Spark + Delta, kept few: reading through views (and CTAS, INSERT … SELECT), the
columns resolved at CREATE, OR REPLACE under a reader, and a dynamic table over a view refreshed
incrementally from the view's table, FULL once after the view is replaced."""

from __future__ import annotations

from lake_assets.session import LakeSession
from lake_assets.views.entry import ViewEntry
from tests.dynamic_tables.refresh_helpers import history_of, rows
from tests.ingest_helpers import refused


def test_reading_through_views_and_their_columns(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (id INT, amount DOUBLE);"
        "INSERT INTO t VALUES (1, 5.0), (2, 20.0), (3, 30.0);"
        "CREATE VIEW big COMMENT 'over 10' AS SELECT id, amount FROM t WHERE amount > 10;"
        "CREATE VIEW big_ids AS SELECT b.id * 10 AS tens FROM big AS b"
    )
    assert rows(lake, "SELECT * FROM big ORDER BY id") == [(2, 20.0), (3, 30.0)]
    assert rows(lake, "SELECT tens FROM big_ids ORDER BY tens") == [(20,), (30,)]
    assert [(c.name, c.type) for c in lake.catalog.get(ViewEntry, "big_ids").columns] == [
        ("tens", "INT")
    ]
    lake.sql(
        "CREATE TABLE copied AS SELECT * FROM big;"
        "CREATE TABLE ids (tens INT); INSERT INTO ids SELECT tens FROM big_ids"
    )
    assert rows(lake, "SELECT count(*) FROM copied") == [(2,)]
    assert rows(lake, "SELECT sum(tens) FROM ids") == [(50,)]
    unknown = refused(lake, "CREATE VIEW bad AS SELECT nope FROM t")
    assert unknown.startswith("view bad was not created: [UNRESOLVED_COLUMN")
    assert "`nope` cannot be resolved" in unknown
    assert lake.catalog.find(ViewEntry, "bad") is None
    # OR REPLACE keeps the columns while another object reads the view; it may change the rest.
    assert refused(lake, "CREATE OR REPLACE VIEW big AS SELECT id FROM t") == (
        "view big is read by view big_ids, so OR REPLACE must keep its columns (id INT, amount "
        "DOUBLE) — return the same columns and types, or drop view big_ids first"
    )
    (replaced,) = lake.sql("CREATE OR REPLACE VIEW big AS SELECT id, amount FROM t WHERE id > 2")
    assert replaced.message == "replaced view big"
    assert rows(lake, "SELECT tens FROM big_ids") == [(30,)]


def test_a_dynamic_table_over_a_view_refreshes_from_the_view_s_table(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE sales (id INT, category STRING, amount INT);"
        "INSERT INTO sales VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 5);"
        "CREATE VIEW kept AS SELECT category, amount FROM sales WHERE amount > 6;"
        "CREATE DYNAMIC TABLE totals AS SELECT category, sum(amount) AS total FROM kept "
        "GROUP BY category"
    )
    assert rows(lake, "SELECT * FROM totals ORDER BY category") == [("a", 30)]
    assert refused(lake, "DROP VIEW kept") == (
        "view kept is used by dynamic table totals — drop dynamic table totals first"
    )
    lake.sql("INSERT INTO sales VALUES (4, 'b', 7), (5, 'b', 1)")
    (refreshed,) = lake.sql("REFRESH DYNAMIC TABLE totals")
    assert refreshed.message.startswith("REFRESH INCREMENTAL")
    assert rows(lake, "SELECT * FROM totals ORDER BY category") == [("a", 30), ("b", 7)]
    # Replaced with the same columns: the next refresh recomputes once, then applies changes again.
    lake.sql("CREATE OR REPLACE VIEW kept AS SELECT category, amount FROM sales WHERE amount > 1")
    lake.sql("REFRESH DYNAMIC TABLE totals")
    newest = history_of(lake, "totals")[0]
    assert (newest["refresh_mode"], newest["reason"]) == (
        "FULL",
        "view kept was replaced since the last refresh",
    )
    assert rows(lake, "SELECT * FROM totals ORDER BY category") == [("a", 30), ("b", 12)]
    lake.sql("INSERT INTO sales VALUES (6, 'a', 2)")
    lake.sql("REFRESH DYNAMIC TABLE totals")
    assert history_of(lake, "totals")[0]["refresh_mode"] == "INCREMENTAL"
    assert rows(lake, "SELECT * FROM totals ORDER BY category") == [("a", 32), ("b", 12)]
    assert refused(lake, "CREATE OR REPLACE VIEW kept AS SELECT category FROM sales").startswith(
        "view kept is read by dynamic table totals, so OR REPLACE must keep its columns"
    )
