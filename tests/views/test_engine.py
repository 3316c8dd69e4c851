"""Views without Spark: how a statement that reads one is bound, and what is refused before Spark
starts (a view over a stream, a cycle, a write to a view, a stream on one, DROP of what a view
reads); SHOW and DESC read the catalog only."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.snapshots import sources_of
from lake_assets.dynamic_tables.steps.lower import definition_of
from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession
from lake_assets.sql.statements import Query
from lake_assets.streams.entry import StreamEntry, StreamMode
from lake_assets.tables.entry import TableEntry
from lake_assets.views.entry import ViewEntry
from tests.ingest_helpers import properties, refused

A = (Column("a", "INT"),)


@pytest.fixture
def session(tmp_path: Path) -> LakeSession:
    """Table t, stream s on it, view v over t and view w over v; Spark is never used."""
    settings = LakeSettings(lake_home=tmp_path)
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: cast(SparkSession, None))
    lake.catalog.add(TableEntry("t", "/w/t", (*A, Column("b", "STRING"))))
    lake.catalog.add(StreamEntry("s", "t", "table", "/w/t", StreamMode.STANDARD, False, 0))
    lake.catalog.add(ViewEntry("v", "SELECT a FROM t WHERE a > 1", ("t",), A, "big"))
    lake.catalog.add(ViewEntry("w", "SELECT a + 1 AS a FROM v", ("v",), A))
    return lake


def bound(session: LakeSession, sql: str) -> str:
    statement = parse_statement(sql)
    assert isinstance(statement, Query)
    return session.bind(statement).sql


def test_a_view_is_bound_as_its_query_and_a_view_over_a_view_too(session: LakeSession) -> None:
    inner = "(SELECT a FROM delta.`/w/t` AS t WHERE a > 1)"
    assert bound(session, "SELECT * FROM v") == f"SELECT * FROM {inner} AS v"
    assert bound(session, "SELECT x.a FROM w AS x") == (
        f"SELECT x.a FROM (SELECT a + 1 AS a FROM {inner} AS v) AS x"
    )


def test_a_view_over_a_dynamic_table_reads_only_its_visible_columns(session: LakeSession) -> None:
    session.catalog.add(
        DynamicTableEntry("d", "/w/d", A, "SELECT a FROM t", ("t",), hidden=("__lake_n",))
    )
    session.catalog.add(ViewEntry("dv", "SELECT * FROM d", ("d",), A))
    assert bound(session, "SELECT * FROM dv") == (
        "SELECT * FROM (SELECT * FROM (SELECT `a` FROM delta.`/w/d`) AS d) AS dv"
    )


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "CREATE VIEW sv AS SELECT * FROM s",
            "view sv cannot read stream s: a stream is consumed by the statement that reads it, "
            "and a view would hide which statement that is — read s in the statement or task "
            "that consumes it (INSERT INTO … SELECT … FROM s)",
        ),
        (
            "CREATE OR REPLACE VIEW v AS SELECT * FROM w",
            "view v would read itself: v → w → v — read the relations it stands for instead of "
            "the view",
        ),
        (
            "CREATE OR REPLACE VIEW v AS SELECT * FROM v",
            "view v would read itself: v → v — read the relations it stands for instead of the "
            "view",
        ),
        ("CREATE VIEW x AS SELECT * FROM nowhere", "table nowhere does not exist"),
        ("CREATE VIEW v AS SELECT 1 AS a", "view v already exists"),
        ("CREATE VIEW t AS SELECT 1 AS a", "table t already exists"),
    ],
)
def test_create_view_refusals_come_before_spark(
    session: LakeSession, sql: str, expected: str
) -> None:
    assert refused(session, sql).startswith(expected)


VIEW_IS_NO_TABLE = (
    "v is a view: it stands for its query and has no rows or changes of its own — write, alter "
    "or stream the relations it reads (t), or change the view with CREATE OR REPLACE VIEW v"
)


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO v VALUES (1)",
        "INSERT OVERWRITE v SELECT a FROM t",
        "UPDATE v SET a = 2",
        "DELETE FROM v WHERE a = 1",
        "MERGE INTO v USING t ON v.a = t.a WHEN MATCHED THEN DELETE",
        "COPY INTO v FROM VOLUME vol USING CSV",
        "ALTER TABLE v SET PROPERTIES ('change_tracking' = 'true')",
    ],
)
def test_a_view_is_never_written_or_altered(session: LakeSession, sql: str) -> None:
    assert refused(session, sql) == VIEW_IS_NO_TABLE


def test_alter_table_columns_and_a_stream_on_a_view_are_refused(session: LakeSession) -> None:
    assert refused(session, "ALTER TABLE v ADD COLUMN z INT").startswith(
        "v is a view: only a table's columns change with ALTER TABLE"
    )
    assert refused(session, "CREATE STREAM vs ON TABLE v") == (
        f"cannot create stream vs: {VIEW_IS_NO_TABLE}"
    )


def test_what_a_view_reads_is_not_dropped_under_it(session: LakeSession) -> None:
    assert refused(session, "DROP TABLE t") == "table t is used by view v — drop view v first"
    assert refused(session, "DROP VIEW v") == "view v is used by view w — drop view w first"
    assert refused(session, "DROP TABLE v") == "v is a view — drop it with DROP VIEW v"
    assert refused(session, "ALTER TABLE t RENAME TO t2").startswith(
        "table t is used by view v, which names it"
    )
    assert refused(session, "ALTER TABLE v RENAME TO v2").startswith(
        "v is a view: only a table is renamed"
    )
    ((dropped,),) = [session.sql("DROP VIEW w")]
    assert dropped.message == "dropped view w"
    ((missing,),) = [session.sql("DROP VIEW IF EXISTS w")]
    assert missing.message == "view w does not exist; nothing to do"


def test_no_cycle_closes_through_views_and_dynamic_tables(session: LakeSession) -> None:
    session.catalog.add(DynamicTableEntry("d", "/w/d", A, "SELECT a FROM t", ("t",)))
    session.catalog.add(ViewEntry("dv", "SELECT * FROM d", ("d",), A))
    assert refused(session, "CREATE OR REPLACE DYNAMIC TABLE d AS SELECT a FROM dv").startswith(
        "dynamic table d would read itself: d → dv → d"
    )
    session.catalog.add(DynamicTableEntry("over_v", "/w/o", A, "SELECT a FROM v", ("v",)))
    assert refused(session, "CREATE OR REPLACE VIEW v AS SELECT a FROM over_v").startswith(
        "view v would read itself: v → over_v → v"
    )


def test_show_and_desc_read_the_catalog(session: LakeSession) -> None:
    (shown,) = session.sql("SHOW VIEWS")
    assert shown.columns == ["name", "created_at", "comment", "query"]
    assert [(name, comment, query) for name, _, comment, query in shown.rows] == [
        ("v", "big", "SELECT a FROM t WHERE a > 1"),
        ("w", None, "SELECT a + 1 AS a FROM v"),
    ]
    described = properties(session, "DESC VIEW w")
    assert {key: described[key] for key in ("name", "query", "sources", "columns")} == {
        "name": "w",
        "query": "SELECT a + 1 AS a FROM v",
        "sources": "v",
        "columns": "a INT",
    }
    assert refused(session, "DESC VIEW t") == (
        "t is a table, not a view — use the statements for a table, or pick another name"
    )


def test_a_dynamic_table_reads_a_view_as_its_query_and_the_view_s_tables(
    session: LakeSession,
) -> None:
    entry = DynamicTableEntry("d", "/w/d", A, "SELECT x.a FROM w AS x", ("w",))
    assert sources_of(entry, session.catalog) == ("t",)
    assert definition_of(entry, session.catalog).sql("spark") == (
        "SELECT x.a FROM (SELECT a + 1 AS a FROM (SELECT a FROM t WHERE a > 1) AS v) AS x"
    )
    session.catalog.add(ViewEntry("old", "SELECT a FROM t VERSION AS OF 1", ("t",), A))
    assert refused(session, "CREATE DYNAMIC TABLE d AS SELECT a FROM old").startswith(
        "dynamic table d reads t VERSION AS OF …"
    )


def test_a_view_s_query_is_checked_again_each_time_it_is_read(session: LakeSession) -> None:
    """A query kept in the catalog by other means than CREATE VIEW still cannot reach files."""
    session.catalog.add(ViewEntry("evil", "SELECT * FROM csv.`/etc/passwd`", (), A))
    assert "reads files directly" in refused(session, "SELECT * FROM evil")
