"""Table statements on real Spark + Delta: results, commit versions, errors that lose nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import delta_ref, history
from lake_assets.core.errors import LakeError
from lake_assets.session import LakeSession
from lake_assets.sql.grammar import StatementError
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import SALES_ROWS, SALES_SOURCE, local_volume, refused


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def versions(spark: SparkSession, lake: LakeSession, table: str) -> list[int]:
    return sorted(
        commit.version for commit in history(spark, lake.catalog.get(TableEntry, table).location)
    )


@pytest.fixture
def sales(lake: LakeSession) -> LakeSession:
    lake.sql(SALES_SOURCE)
    return lake


def test_the_sales_source_script_gives_its_five_rows(sales: LakeSession) -> None:
    assert rows(sales, "SELECT * FROM sales_source ORDER BY id") == SALES_ROWS
    entry = sales.catalog.get(TableEntry, "sales_source")
    assert (entry.version, entry.row_count) == (1, 5)
    assert entry.comment == "Data lake acceleration test source table"


def test_update_merge_delete_each_make_one_commit(spark: SparkSession, sales: LakeSession) -> None:
    (update,) = sales.sql("UPDATE sales_source SET amount = amount * 2 WHERE category = 'Sports'")
    assert update.message == (
        "UPDATE: 0 inserted, 2 updated, 0 deleted; sales_source is at version 2 with 5 rows"
    )
    (merge,) = sales.sql(
        """MERGE INTO sales_source t
        USING (SELECT * FROM VALUES (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'),
                                    (6, 'Kindle', 'Electronics', 999.00, '2026-06-02')
               AS s(id, product, category, amount, dt)) s
        ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET t.amount = s.amount
        WHEN NOT MATCHED THEN INSERT *"""
    )
    assert merge.message == (
        "MERGE: 1 inserted, 1 updated, 0 deleted; sales_source is at version 3 with 6 rows"
    )
    (delete,) = sales.sql("DELETE FROM sales_source WHERE id = 6")
    assert delete.message == (
        "DELETE: 0 inserted, 0 updated, 1 deleted; sales_source is at version 4 with 5 rows"
    )
    assert rows(
        sales, "SELECT id, amount FROM sales_source WHERE category = 'Sports' ORDER BY id"
    ) == [
        (4, Decimal("899.00")),
        (5, Decimal("398.00")),
    ]
    assert versions(spark, sales, "sales_source") == [0, 1, 2, 3, 4]
    (described,) = sales.sql("DESC HISTORY sales_source")
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in described.rows] == [
        (4, "DELETE", 0, 0, 1),
        (3, "MERGE", 1, 1, 0),
        (2, "UPDATE", 0, 2, 0),
        (1, "WRITE", 5, 0, 0),
        (0, "CREATE TABLE", None, None, None),
    ]


def test_row_count_stays_exact_when_another_writer_commits_in_between(
    spark: SparkSession, sales: LakeSession
) -> None:
    location = sales.catalog.get(TableEntry, "sales_source").location
    spark.sql(f"INSERT INTO {delta_ref(location)} VALUES (7, 'x', 'y', 1.00, 'z')")
    (insert,) = sales.sql("INSERT INTO sales_source VALUES (8, 'x', 'y', 1.00, 'z')")
    assert insert.message.endswith("sales_source is at version 3 with 7 rows")
    entry = sales.catalog.get(TableEntry, "sales_source")
    assert (entry.version, entry.row_count) == (3, 7)


def test_queries_join_aggregate_union_and_order(sales: LakeSession) -> None:
    sales.sql(
        "CREATE TABLE categories (name STRING, manager STRING);"
        "INSERT INTO categories VALUES ('Electronics', 'Ann'), ('Sports', 'Bo')"
    )
    assert rows(
        sales,
        """SELECT c.manager, COUNT(*) AS orders, SUM(s.amount) AS total
        FROM sales_source s JOIN categories c ON s.category = c.name
        GROUP BY c.manager ORDER BY total DESC""",
    ) == [("Ann", 3, Decimal("25297.00")), ("Bo", 2, Decimal("1098.00"))]
    assert rows(
        sales,
        """SELECT 'Source' AS stage, COUNT(*) AS n FROM sales_source
        UNION ALL SELECT 'Categories' AS stage, COUNT(*) AS n FROM categories""",
    ) == [("Source", 5), ("Categories", 2)]


def test_change_tracking_turns_on_the_change_data_feed(
    spark: SparkSession, sales: LakeSession
) -> None:
    sales.sql("ALTER TABLE sales_source SET PROPERTIES ('change_tracking' = 'true')")
    entry = sales.catalog.get(TableEntry, "sales_source")
    assert entry.change_tracking
    properties = dict(spark.sql(f"SHOW TBLPROPERTIES {delta_ref(entry.location)}").collect())
    assert properties["delta.enableChangeDataFeed"] == "true"
    sales.sql("UPDATE sales_source SET amount = 1 WHERE id = 1")
    changes = spark.sql(
        f"SELECT _change_type, id, amount FROM table_changes_by_path('{entry.location}', 3) "
        "ORDER BY _change_type"
    ).collect()
    assert [tuple(row) for row in changes] == [
        ("update_postimage", 1, Decimal("1.00")),
        ("update_preimage", 1, Decimal("8999.00")),
    ]


def test_describe_and_show_read_the_catalog(sales: LakeSession) -> None:
    (described,) = sales.sql("DESC TABLE sales_source")
    assert described.columns == ["column_name", "data_type", "comment", "primary_key", "cluster_by"]
    assert list(described.rows)[3] == ("amount", "DECIMAL(10,2)", "Amount", None, None)
    (shown,) = sales.sql("SHOW TABLES")
    (row,) = shown.rows
    assert row[:7] == ("sales_source", "TABLE", False, False, None, 5, 1)


def test_drop_removes_the_table_and_its_files(sales: LakeSession) -> None:
    location = Path(sales.catalog.get(TableEntry, "sales_source").location)
    assert location.exists()
    sales.sql("DROP TABLE sales_source")
    assert not location.exists()
    assert sales.catalog.find(TableEntry, "sales_source") is None
    (again,) = sales.sql("DROP TABLE IF EXISTS sales_source")
    assert again.message == "table sales_source does not exist; nothing to do"
    sales.sql(SALES_SOURCE.split(";")[0])
    assert rows(sales, "SELECT COUNT(*) FROM sales_source") == [(0,)]


def test_create_twice_fails_unless_if_not_exists(sales: LakeSession) -> None:
    with pytest.raises(StatementError, match="table sales_source already exists"):
        sales.sql("CREATE TABLE sales_source (id INT)")
    (result,) = sales.sql("CREATE TABLE IF NOT EXISTS sales_source (id INT)")
    assert result.message == "table sales_source already exists; nothing to do"


def test_unknown_table_is_named(sales: LakeSession) -> None:
    with pytest.raises(
        StatementError, match="table nowhere does not exist — check the name with SHOW TABLES"
    ):
        sales.sql("SELECT * FROM nowhere")


def test_a_query_sixty_parentheses_deep_runs(sales: LakeSession) -> None:
    deep = "(" * 60 + "id" + ")" * 60
    assert rows(sales, f"SELECT {deep} FROM sales_source WHERE {deep} = 1") == [(1,)]


def test_unknown_column_names_the_table_not_its_path(sales: LakeSession) -> None:
    with pytest.raises(StatementError) as raised:
        sales.sql("SELECT price FROM sales_source")
    message = str(raised.value)
    assert "[UNRESOLVED_COLUMN" in message
    assert "price" in message
    assert "DESC TABLE" in message
    assert str(sales.warehouse) not in message


@pytest.mark.parametrize(
    ("statement", "condition"),
    [
        ("INSERT INTO sales_source VALUES ('x', 'a', 'b', 1.00, 'd')", "CAST_INVALID_INPUT"),
        (
            "INSERT INTO sales_source VALUES (9, 'a', 'b', 123456789012.00, 'd')",
            "CAST_OVERFLOW_IN_TABLE_INSERT",
        ),
        ("INSERT INTO sales_source VALUES (9, 'a')", "INSERT_COLUMN_ARITY_MISMATCH"),
        ("UPDATE sales_source SET amount = 'lots' WHERE id = 1", "CAST_INVALID_INPUT"),
    ],
)
def test_type_errors_leave_no_commit(
    spark: SparkSession, sales: LakeSession, statement: str, condition: str
) -> None:
    before = versions(spark, sales, "sales_source")
    with pytest.raises(StatementError, match=condition) as raised:
        sales.sql(statement)
    assert raised.value.number == 1
    assert versions(spark, sales, "sales_source") == before
    assert rows(sales, "SELECT * FROM sales_source ORDER BY id") == SALES_ROWS


def test_varchar_limit_is_enforced_without_a_commit(spark: SparkSession, lake: LakeSession) -> None:
    lake.sql("CREATE TABLE codes (code VARCHAR(3))")
    with pytest.raises(StatementError, match="DELTA_EXCEED_CHAR_VARCHAR_LIMIT") as raised:
        lake.sql("INSERT INTO codes VALUES ('abcd')")
    assert raised.value.fix == "shorten the value or widen the column"
    assert versions(spark, lake, "codes") == [0]


def test_a_syntax_error_anywhere_runs_nothing(lake: LakeSession) -> None:
    with pytest.raises(StatementError, match="syntax error") as raised:
        lake.sql("CREATE TABLE first_one (id INT); INSERT INTO first_one VALUES (1")
    assert raised.value.number == 2
    assert lake.catalog.entries(TableEntry) == []
    assert not lake.warehouse.exists()


def test_failed_statement_stops_the_script_after_earlier_commits(lake: LakeSession) -> None:
    with pytest.raises(StatementError) as raised:
        lake.sql(
            "CREATE TABLE a (id INT); INSERT INTO a VALUES (1); "
            "INSERT INTO a VALUES ('x'); INSERT INTO a VALUES (3)"
        )
    assert raised.value.number == 3
    assert rows(lake, "SELECT id FROM a") == [(1,)]


def test_unknown_property_is_refused(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE a (id INT)")
    with pytest.raises(LakeError, match="unknown table property 'retention'"):
        lake.sql("ALTER TABLE a SET PROPERTIES ('retention' = '7')")


def test_a_declared_key_is_shown_by_desc_and_not_enforced(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql("CREATE TABLE orders (Id BIGINT, line INT, note STRING, PRIMARY KEY (id, LINE))")
    assert lake.catalog.get(TableEntry, "orders").primary_key == ("Id", "line")
    assert rows(lake, "DESC TABLE orders") == [
        ("Id", "BIGINT", None, 1, None),
        ("line", "INT", None, 2, None),
        ("note", "STRING", None, None, None),
    ]
    lake.sql("INSERT INTO orders VALUES (1, 1, 'a'), (1, 1, 'b')")
    assert rows(lake, "SELECT COUNT(*) FROM orders WHERE Id = 1 AND line = 1") == [(2,)]


def test_alter_table_sets_replaces_and_drops_the_key_in_the_catalog_only(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql("CREATE TABLE t (a INT, b STRING, c DATE PRIMARY KEY)")
    (replaced,) = lake.sql("ALTER TABLE t SET PRIMARY KEY (B, a)")
    assert replaced.message == "table t has primary key (b, a)"
    assert [row[3] for row in rows(lake, "DESC TABLE t")] == [2, 1, None]
    (dropped,) = lake.sql("ALTER TABLE T DROP PRIMARY KEY")
    assert dropped.message == "table t has no primary key"
    assert lake.catalog.get(TableEntry, "t").primary_key == ()
    assert [row[3] for row in rows(lake, "DESC TABLE t")] == [None, None, None]
    assert versions(spark, lake, "t") == [0]  # no Delta commit: the key lives in the catalog


def test_alter_key_errors_leave_the_key_as_it_was(lake: LakeSession) -> None:
    lake.sql("CREATE TABLE t (a INT, b STRING, PRIMARY KEY (a))")
    with pytest.raises(StatementError) as raised:
        lake.sql("ALTER TABLE t SET PRIMARY KEY (a, c)")
    assert (raised.value.what, raised.value.fix) == (
        "primary key column c is not a column of table t",
        "choose among its columns: a, b",
    )
    assert lake.catalog.get(TableEntry, "t").primary_key == ("a",)
    with pytest.raises(StatementError) as raised:
        lake.sql("ALTER TABLE nowhere SET PRIMARY KEY (a)")
    assert str(raised.value) == (
        "table nowhere does not exist — check the name with SHOW TABLES or create it with "
        "CREATE TABLE"
    )
    with pytest.raises(StatementError) as raised:
        lake.sql("ALTER DYNAMIC TABLE t DROP PRIMARY KEY")
    assert str(raised.value) == "t is a table — alter its key with ALTER TABLE t"
    assert lake.catalog.get(TableEntry, "t").primary_key == ("a",)


def test_a_table_a_pipe_loads_is_not_dropped_under_it(lake: LakeSession, tmp_path: Path) -> None:
    local_volume(lake, tmp_path / "landing")
    lake.sql("CREATE TABLE t (id INT); CREATE PIPE p AS COPY INTO t FROM VOLUME v USING CSV")
    assert refused(lake, "DROP TABLE t") == "table t is used by pipe p — drop pipe p first"
    assert refused(lake, "DROP TABLE IF EXISTS t").startswith("table t is used by pipe p")
    assert Path(lake.catalog.get(TableEntry, "t").location).exists()
    lake.sql("DROP PIPE p; DROP TABLE t")
    assert lake.catalog.find(TableEntry, "t") is None


def test_drop_table_sees_a_pipe_created_after_its_checks(
    lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another session creates a pipe on the table once DROP has looked for users but before
    its removal's transaction: the removal sees it, as it checks in its own transaction."""
    local_volume(lake, tmp_path / "landing")
    lake.sql("CREATE TABLE t (id INT)")
    other = LakeSession(Catalog(lake.settings.catalog_path), lake.settings, lambda: lake.spark)
    remove = Catalog.remove
    rivals = ["CREATE PIPE p AS COPY INTO t FROM VOLUME v USING CSV"]

    def rival_first(catalog: Catalog, *args: Any, **kwargs: Any) -> Any:
        while rivals:
            other.sql(rivals.pop())
        return remove(catalog, *args, **kwargs)

    monkeypatch.setattr(Catalog, "remove", rival_first)
    assert refused(lake, "DROP TABLE t") == "table t is used by pipe p — drop pipe p first"
    assert lake.catalog.find(TableEntry, "t") is not None


def test_copy_into_or_refresh_of_a_stream_is_one_line(lake: LakeSession, tmp_path: Path) -> None:
    local_volume(lake, tmp_path / "landing")
    lake.sql("CREATE TABLE t (id INT); CREATE TABLE STREAM s ON TABLE t")
    written = (
        "s is a stream: it shows another table's changes and cannot be written — read it with "
        "SELECT … FROM s, and write the table it reads (t) or a table of your own instead"
    )
    assert refused(lake, "COPY INTO s FROM VOLUME v USING CSV") == written
    assert refused(lake, "REFRESH DYNAMIC TABLE s") == written
