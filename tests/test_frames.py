"""The Python session API on real Spark and Delta: an orders table's STANDARD stream shown, then
saved by `save_as_table`, frames that consume streams only when saved, SQL results, COPY's
options and rejected rows, names refused
in one line, and a Dagster asset's session. The last test runs the flow over a real
`lake spark-server` (Spark Connect)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from dagster import asset, materialize
from pyspark.sql import Row, SparkSession

from lake_assets import functions as F
from lake_assets.core.commits import STATEMENT_MARKER, decode
from lake_assets.core.delta import history
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.frame_proxies import LakeFrame
from lake_assets.frames import SqlResult
from lake_assets.session import Session
from lake_assets.tables.entry import TableEntry
from resources.spark import DeltaSparkResource
from tests.connect_server import connect_server

ORDERS = """
    CREATE TABLE IF NOT EXISTS orders (
        id INT,
        name STRING,
        amount DECIMAL(10,2),
        status STRING
    )
"""
TARGET = """
    CREATE TABLE IF NOT EXISTS orders_target (
        id INT,
        name STRING,
        amount DECIMAL(10,2),
        status STRING
    )
"""


@pytest.fixture
def session(spark: SparkSession, tmp_path: Path) -> Session:
    return Session.from_spark(spark, lake_home=tmp_path)


def offset(session: Session, stream: str) -> int:
    properties = {row.property: row.value for row in session.sql(f"DESC STREAM {stream}").collect()}
    return properties["offset_version"]


def table_rows(session: Session, name: str) -> list[tuple]:
    return sorted(tuple(row) for row in session.table(name).collect())


def small_setup(session: Session) -> None:
    """A stream with three pending INSERTs, in one script."""
    session.sql(f"""
        {ORDERS};
        CREATE TABLE STREAM orders_stream ON TABLE orders;
        INSERT INTO orders VALUES
            (1, 'Alice', 1000.00, 'active'),
            (2, 'Bob', 2000.00, 'active'),
            (4, 'Dave', 3000.00, 'active')
    """).collect()


def orders_changes(session: Session) -> None:
    session.sql("INSERT INTO orders VALUES (4, 'Dave', 3000.00, 'active')").collect()
    session.sql("UPDATE orders SET amount = 1500.00 WHERE id = 1").collect()
    session.sql("DELETE FROM orders WHERE id = 3").collect()


def test_an_orders_stream_is_consumed_only_when_saved(
    session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    session.sql(ORDERS).collect()
    assert session.sql("""
        ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true')
    """).collect() == [Row(status="altered table orders")]
    assert session.sql("""
        INSERT INTO orders VALUES
            (1, 'Alice', 1000.00, 'active'),
            (2, 'Bob', 2000.00, 'active'),
            (3, 'Carol', 500.00, 'active')
    """).collect() == [
        Row(status="INSERT: 3 inserted, 0 updated, 0 deleted; orders is at version 2 with 3 rows")
    ]
    session.sql("""
        CREATE TABLE STREAM orders_stream
        ON TABLE orders
        WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')
    """).collect()

    stream_df = session.table("orders_stream")
    stream_df.printSchema()
    schema = capsys.readouterr().out
    for line in (
        "|-- __change_type: string",
        "|-- __commit_version: long",
        "|-- __commit_timestamp: timestamp",
        "|-- id: integer",
        "|-- amount: decimal(10,2)",
    ):
        assert line in schema
    assert stream_df.count() == 0

    orders_changes(session)
    stream_df = session.table("orders_stream")
    stream_df.show()
    shown = capsys.readouterr().out
    assert "| UPDATE_AFTER|" in shown
    assert "|UPDATE_BEFORE|" in shown

    inserts_and_updates = stream_df.filter(
        F.col("`__change_type`").isin(["INSERT", "UPDATE_AFTER"])
    ).select("id", "name", "amount", "status")
    deletes = stream_df.filter(F.col("`__change_type`") == "DELETE").select("id")
    assert sorted(tuple(row) for row in inserts_and_updates.collect()) == [
        (1, "Alice", Decimal("1500.00"), "active"),
        (4, "Dave", Decimal("3000.00"), "active"),
    ]
    assert deletes.collect() == [Row(id=3)]
    images = {
        (row["__change_type"], row.id): row["__commit_version"] for row in stream_df.collect()
    }
    history_rows = session.sql("DESC HISTORY orders").collect()
    versions = {row.operation: row.version for row in reversed(history_rows)}  # newest wins
    assert sorted(images) == [
        ("DELETE", 3),
        ("INSERT", 4),
        ("UPDATE_AFTER", 1),
        ("UPDATE_BEFORE", 1),
    ]
    assert (images["INSERT", 4], images["UPDATE_AFTER", 1]) == (
        versions["WRITE"],
        versions["UPDATE"],
    )
    # Old images carry the commit that last wrote them, from before the stream's offset.
    assert images["UPDATE_BEFORE", 1] == images["DELETE", 3] < stream_df.stream_reads[0].start

    session.sql(TARGET).collect()
    early = session.table("orders_stream")  # read, then consumed by the save below
    stream_df = session.table("orders_stream")
    changes = stream_df.filter(F.col("`__change_type`").isin(["INSERT", "UPDATE_AFTER"])).select(
        "id", "name", "amount", "status"
    )

    # Reading never moves the offset.
    before = offset(session, "orders_stream")
    changes.show()
    changes.collect()
    changes.toPandas()
    assert offset(session, "orders_stream") == before

    changes.write.save_as_table("orders_target", mode="append")

    assert table_rows(session, "orders_target") == [
        (1, "Alice", Decimal("1500.00"), "active"),
        (4, "Dave", Decimal("3000.00"), "active"),
    ]
    latest = max(versions.values())
    assert offset(session, "orders_stream") == latest
    assert session.table("orders_stream").count() == 0
    target = session.lake.catalog.get(TableEntry, "orders_target")
    assert (target.version, target.row_count) == (1, 2)
    (commit, *_) = history(session.spark, target.location)
    assert decode(commit.user_metadata, STATEMENT_MARKER)["operation"] == "INSERT"

    # A frame read before the consumption cannot consume the same changes again.
    stale = early.filter(F.col("`__change_type`") == "INSERT").select("id", "name", "amount")
    with pytest.raises(LakeError) as error:
        stale.write.save_as_table("orders_target", mode="append")
    assert str(error.value) == (
        f"stream orders_stream moved since it was read (its offset is now version "
        f"{latest}) — read the stream again and repeat the write; nothing was written"
    )
    # … nor create a table on the way.
    with pytest.raises(LakeError, match="moved since"):
        stale.write.save_as_table("orders_copy")
    assert session.lake.catalog.find_relation("orders_copy") is None
    assert len(table_rows(session, "orders_target")) == 2
    assert offset(session, "orders_stream") == latest

    # New changes are the next read's, and only theirs.
    session.sql("INSERT INTO orders VALUES (5, 'Erin', 10.00, 'active')").collect()
    assert [tuple(row)[3:] for row in session.table("orders_stream").collect()] == [
        (5, "Erin", Decimal("10.00"), "active")
    ]


def test_overwrite_consumes_and_counts_the_rows_it_left(session: Session) -> None:
    small_setup(session)
    session.sql(f"{TARGET}; INSERT INTO orders_target VALUES (7, 'Old', 1.00, 'gone')").collect()
    big = session.table("orders_stream").filter(F.col("amount") > 1500)
    big.select("id", "name", "amount", "status").write.mode("overwrite").saveAsTable(
        "orders_target"
    )
    assert table_rows(session, "orders_target") == [
        (2, "Bob", Decimal("2000.00"), "active"),
        (4, "Dave", Decimal("3000.00"), "active"),
    ]
    target = session.lake.catalog.get(TableEntry, "orders_target")
    assert (target.version, target.row_count) == (2, 2)
    (commit, *_) = history(session.spark, target.location)
    assert decode(commit.user_metadata, STATEMENT_MARKER)["operation"] == "INSERT OVERWRITE"
    assert session.table("orders_stream").count() == 0


def test_save_as_table_creates_the_table_from_the_frame(session: Session) -> None:
    small_setup(session)
    customers = session.create_dataframe([(1, "gold"), (4, "silver")], "id INT, tier STRING")
    joined = (
        session.table("orders_stream")
        .filter(F.col("`__change_type`") != "UPDATE_BEFORE")
        .join(F.broadcast(customers), "id")
        .groupBy("tier")
        .agg(F.sum("amount").alias("total"), F.count("*").alias("changes"))
    )
    assert isinstance(joined, LakeFrame)
    assert [read.stream for read in joined.stream_reads] == ["orders_stream"]

    joined.write.save_as_table("Tier_Totals")

    plain = {"comment": None, "primary_key": None, "cluster_by": None}
    assert session.sql("DESC TABLE tier_totals").collect() == [
        Row(column_name="tier", data_type="STRING", **plain),
        Row(column_name="total", data_type="DECIMAL(20,2)", **plain),
        Row(column_name="changes", data_type="BIGINT", **plain),
    ]
    assert table_rows(session, "tier_totals") == [
        ("gold", Decimal("1000.00"), 1),
        ("silver", Decimal("3000.00"), 1),
    ]
    entry = session.lake.catalog.get(TableEntry, "tier_totals")
    assert (entry.version, entry.row_count) == (1, 2)
    assert session.table("orders_stream").count() == 0

    with pytest.raises(LakeError, match=r"^table tier_totals already exists — save with mode="):
        joined.write.save_as_table("tier_totals")
    joined.write.save_as_table("tier_totals", mode="ignore")
    assert session.lake.catalog.get(TableEntry, "tier_totals").version == 1
    with pytest.raises(LakeError, match=r"^unknown save mode 'upsert' — use one of: append, "):
        joined.write.save_as_table("tier_totals", mode="upsert")
    arrays = session.table("orders").select(F.array("id").alias("ids"))
    with pytest.raises(
        LakeError, match=r"^column ids has the type array<int>, which a table cannot hold — cast it"
    ):
        arrays.write.save_as_table("arrays")
    assert session.lake.catalog.find_relation("arrays") is None
    with pytest.raises(LakeError, match=r"^orders_stream is a stream: it shows another table's"):
        session.table("orders").write.save_as_table("orders_stream", mode="append")


def test_sql_returns_rows_statuses_and_lazy_queries(session: Session) -> None:
    small_setup(session)
    query = session.sql("SELECT id, name FROM orders WHERE amount < 2500 ORDER BY id")
    assert isinstance(query, LakeFrame)
    assert query.collect() == [Row(id=1, name="Alice"), Row(id=2, name="Bob")]
    script = session.sql(
        "INSERT INTO orders VALUES (9, 'Zed', 1.00, 'x'); SELECT COUNT(*) AS n FROM orders"
    )
    assert isinstance(script, SqlResult)
    assert script.collect() == [Row(n=4)]
    assert [row.name for row in session.sql("SHOW TABLE STREAMS").collect()] == ["orders_stream"]
    stream_query = session.sql("SELECT id FROM orders_stream")
    assert [read.stream for read in stream_query.stream_reads] == ["orders_stream"]

    session.sql(
        "CREATE DYNAMIC TABLE averages AS "
        "SELECT status, AVG(amount) AS average FROM orders GROUP BY status"
    ).collect()
    averages = session.table("averages")
    assert averages.columns == ["status", "average"]  # not its hidden sums and counts
    assert sorted(averages.collect()) == [
        Row(status="active", average=Decimal("2000.000000")),
        Row(status="x", average=Decimal("1.000000")),
    ]
    with pytest.raises(LakeError, match=r"^averages is a dynamic table: only its refreshes write"):
        averages.write.save_as_table("averages", mode="append")


def test_copy_options_validation_and_rejected_rows_through_the_session(
    session: Session, tmp_path: Path
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "orders.csv").write_text("ID,Amount\n1,2.50\n2,lots\n3,1.00\n")
    session.sql(f"""
        CREATE STORAGE CONNECTION c TYPE LOCAL;
        CREATE EXTERNAL VOLUME v LOCATION '{landing.as_uri()}/' USING CONNECTION c;
        CREATE TABLE amounts (id INT, amount DECIMAL(10,2))
    """).collect()
    copy = (
        "COPY INTO amounts FROM VOLUME v USING CSV OPTIONS('header' = 'true') "
        "MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE"
    )
    errors = session.sql(f"{copy} VALIDATION_MODE = RETURN_ERRORS").collect()
    assert [(row.row_number, row.column_name) for row in errors] == [(3, "amount")]
    assert session.table("amounts").collect() == []  # validation writes nothing
    session.sql(f"{copy} ON_ERROR = CONTINUE").collect()
    assert table_rows(session, "amounts") == [(1, Decimal("2.50")), (3, Decimal("1.00"))]
    rejected = session.sql("SELECT row_number, raw_record FROM rejected_rows('amounts')")
    assert [tuple(row) for row in rejected.collect()] == [(3, "2,lots")]


def test_unknown_names_and_settings_are_one_clear_line(session: Session) -> None:
    with pytest.raises(LakeError) as error:
        session.table("nope")
    assert str(error.value) == (
        "table nope does not exist — check the name with SHOW TABLES or create it with CREATE TABLE"
    )
    with pytest.raises(LakeError, match=r"^'public\.' names a schema"):
        session.table("public.orders")
    with pytest.raises(LakeError) as error:
        Session.builder.configs({"username": "your_username", "schema": "public"})
    assert str(error.value) == (
        "unknown session setting 'username' — use only: lake_home, spark_master, spark_remote, "
        "spark_conf, schema, vcluster"
    )
    with pytest.raises(LakeError, match=r"^schema 'sales' does not exist: every object lives in"):
        Session.builder.config("schema", "sales")
    with pytest.raises(LakeError, match=r"^spark_conf must be a dict"):
        Session.builder.config("spark_conf", "a=b")
    chained = Session.builder.config("schema", "PUBLIC").config("vcluster", "default")
    assert chained is not Session.builder  # every Session.builder is a fresh one


def test_a_dagster_asset_builds_a_session_on_the_projects_spark_resource(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_setup(session)
    session.sql(TARGET).collect()

    @asset(deps=["orders"])
    def orders_sync(spark: DeltaSparkResource) -> None:
        """The example asset of docs/python-api.md."""
        lake = Session.from_spark(spark.spark_session)
        changes = (
            lake.table("orders_stream")
            .filter(F.col("`__change_type`").isin(["INSERT", "UPDATE_AFTER"]))
            .select("id", "name", "amount", "status")
        )
        changes.write.save_as_table("orders_target", mode="append")

    monkeypatch.setenv("LAKE_HOME", str(tmp_path))
    monkeypatch.delenv("LAKE_SPARK_REMOTE", raising=False)
    settings = LakeSettings(lake_home=tmp_path, jars_dir=LakeSettings.from_env().jars_dir)
    resource = DeltaSparkResource.from_settings(settings)
    assert materialize([orders_sync], resources={"spark": resource}).success
    assert len(table_rows(session, "orders_target")) == 3
    assert session.table("orders_stream").count() == 0


@pytest.fixture
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A `lake spark-server` of this test's own."""
    with connect_server(tmp_path_factory.mktemp("frames-connect")) as url:
        yield url


def test_streams_consume_over_spark_connect(connect_url: str, tmp_path: Path) -> None:
    with Session.builder.configs(
        {"lake_home": tmp_path, "spark_remote": connect_url, "schema": "public"}
    ).create() as session:
        assert type(session.spark).__module__ == "pyspark.sql.connect.session"
        small_setup(session)
        session.sql(TARGET).collect()
        early = session.table("orders_stream")
        changes = (
            session.table("orders_stream")
            .filter(F.col("`__change_type`").isin(["INSERT", "UPDATE_AFTER"]))
            .select("id", "name", "amount", "status")
        )
        changes.show()
        changes.write.save_as_table("orders_target", mode="append")
        assert len(table_rows(session, "orders_target")) == 3
        assert session.table("orders_stream").count() == 0
        with pytest.raises(LakeError, match=r"^stream orders_stream moved since"):
            early.write.save_as_table("orders_target", mode="append")


def test_save_as_table_judges_its_rows_by_the_tables_expectations(session: Session) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, CONSTRAINT positive EXPECT (id > 0) ON VIOLATION DROP ROW)"
    ).collect()
    session.sql("SELECT CAST(1 AS BIGINT) AS id UNION ALL SELECT -1").write.save_as_table(
        "t", mode="append"
    )
    assert table_rows(session, "t") == [(1,)]
    quarantined = session.sql("SELECT id, expectation FROM quarantined_rows('t')").collect()
    assert [tuple(row) for row in quarantined] == [(-1, "positive")]
