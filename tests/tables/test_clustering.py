"""CLUSTER BY and OPTIMIZE: refusals and DESC read the catalog only; on real Spark + Delta, OPTIMIZE
lays a clustered table's files out (or compacts a dynamic table's) in one commit that changes no
row, and ALTER … CLUSTER BY NONE clears the layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import delta_ref, latest_version
from lake_assets.core.entries import Column
from lake_assets.core.settings import LakeSettings
from lake_assets.core.writes import STATEMENT_COMMITTED
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.session import LakeSession
from lake_assets.tables.engine import LAYOUT_COMMITTED
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.layout import CLUSTERING_DOMAIN, committed_clustering
from tests.crashes import Crash, crash_at
from tests.ingest_helpers import message, refused, rows

COLUMNS = (Column("Id", "BIGINT"), Column("tags", "ARRAY<STRING>"), Column("dt", "DATE"))


def no_spark() -> SparkSession:
    raise AssertionError("this statement must not start Spark")


@pytest.fixture
def catalog_only(tmp_path: Path) -> LakeSession:
    """Table t clustered by (dt, Id), table u unclustered and dynamic table d over t, in a
    session without Spark."""
    settings = LakeSettings(lake_home=tmp_path)
    lake = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    lake.catalog.add(TableEntry("t", "/w/t-1", COLUMNS, cluster_by=("dt", "Id")))
    lake.catalog.add(TableEntry("u", "/w/u-1", COLUMNS))
    lake.catalog.add(DynamicTableEntry("d", "/w/d-1", COLUMNS, "SELECT * FROM t", ("t",)))
    return lake


def test_desc_table_gives_each_column_its_place_in_the_clustering(
    catalog_only: LakeSession,
) -> None:
    assert [row[4] for row in rows(catalog_only, "DESC TABLE t")] == [2, None, 1]
    assert [row[4] for row in rows(catalog_only, "DESC TABLE d")] == [None, None, None]


@pytest.mark.parametrize(
    ("statement", "error"),
    [
        (
            "ALTER TABLE t CLUSTER BY (id, day)",
            "clustering column day is not a column of table t — choose among its columns: Id, "
            "tags, dt",
        ),
        (
            "ALTER TABLE t CLUSTER BY (TAGS)",
            "clustering column tags of table t is ARRAY<STRING>: files are clustered by numbers, "
            "strings, dates and timestamps only — cluster the table by columns of those types",
        ),
        (
            "ALTER TABLE d CLUSTER BY (id)",
            "d is a dynamic table: only a table's files are clustered with CLUSTER BY — cluster "
            "a table instead: ALTER TABLE t CLUSTER BY (col, …)",
        ),
        (
            "ALTER TABLE nowhere CLUSTER BY NONE",
            "table nowhere does not exist — check the name with SHOW TABLES or create it with "
            "CREATE TABLE",
        ),
        (
            "OPTIMIZE u FULL",
            "table u is not clustered: OPTIMIZE … FULL lays out the files of a clustered table — "
            "compact its files with OPTIMIZE u (or cluster it first: ALTER TABLE u CLUSTER BY "
            "(col, …))",
        ),
        (
            "OPTIMIZE d FULL",
            "dynamic table d is not clustered: OPTIMIZE … FULL lays out the files of a clustered "
            "table — compact its files with OPTIMIZE d",
        ),
        (
            "OPTIMIZE nowhere",
            "table nowhere does not exist — check the name with SHOW TABLES or create it with "
            "CREATE TABLE",
        ),
    ],
)
def test_clustering_refusals_read_the_catalog_only_and_change_nothing(
    catalog_only: LakeSession, statement: str, error: str
) -> None:
    assert refused(catalog_only, statement) == error
    assert catalog_only.catalog.get(TableEntry, "t").cluster_by == ("dt", "Id")


def commit_file(log: Path, version: int, *actions: dict[str, object]) -> None:
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def clustering_action(*paths: list[str]) -> dict[str, object]:
    configuration = {"clusteringColumns": list(paths), "domainName": CLUSTERING_DOMAIN}
    return {
        "domainMetadata": {"domain": CLUSTERING_DOMAIN, "configuration": json.dumps(configuration)}
    }


def test_the_layout_committed_after_the_recorded_version_is_read_from_the_log(
    tmp_path: Path,
) -> None:
    log = tmp_path / "t" / "_delta_log"
    commit_file(log, 0, {"commitInfo": {"operation": "CREATE TABLE"}})
    commit_file(log, 1, clustering_action(["kind"]), {"commitInfo": {"operation": "CLUSTER BY"}})
    commit_file(log, 2, clustering_action(["a", "b"], ["Id"]))
    commit_file(log, 3, {"commitInfo": {"operation": "WRITE"}})
    location = str(tmp_path / "t")
    assert committed_clustering(location, 0) == ("a.b", "Id")  # the newest layout wins
    assert committed_clustering(location, 2) is None  # recorded: nothing to read
    assert committed_clustering(location, None) is None
    assert committed_clustering(str(tmp_path / "gone"), 0) is None
    commit_file(log, 4, clustering_action())
    assert committed_clustering(location, 3) == ()  # CLUSTER BY NONE


def test_a_crash_after_a_layout_or_optimize_commit_leaves_no_false_state(
    spark: SparkSession, lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake.sql(
        "CREATE TABLE events (Id BIGINT, kind STRING);"
        "INSERT INTO events VALUES (1, 'b'); INSERT INTO events VALUES (2, 'a')"
    )
    before = rows(lake, "SELECT * FROM events ORDER BY Id")
    crash_at(monkeypatch, LAYOUT_COMMITTED)
    with pytest.raises(Crash):
        lake.sql("ALTER TABLE events CLUSTER BY (KIND)")
    monkeypatch.undo()
    assert lake.catalog.get(TableEntry, "events").cluster_by == ()  # its record was cut off
    assert [row[4] for row in rows(lake, "DESC TABLE events")] == [None, 1]  # as Delta's log says
    assert lake.catalog.get(TableEntry, "events").cluster_by == ("kind",)

    crash_at(monkeypatch, STATEMENT_COMMITTED)
    with pytest.raises(Crash):
        lake.sql("OPTIMIZE events FULL")
    monkeypatch.undo()
    assert layout(spark, lake.catalog.get(TableEntry, "events").location) == (["kind"], 1)
    assert message(lake, "OPTIMIZE events") == "OPTIMIZE: no change to events"
    assert message(lake, "INSERT INTO events VALUES (3, 'c')") == (
        "INSERT: 1 inserted, 0 updated, 0 deleted; events is at version 5 with 3 rows"
    )
    assert rows(lake, "SELECT * FROM events WHERE Id < 3 ORDER BY Id") == before
    operations = [row[2] for row in rows(lake, "DESC HISTORY events")]
    assert operations.count("OPTIMIZE") == 1


def layout(spark: SparkSession, location: str) -> tuple[list[str], int]:
    """Delta's own account of a table: its clustering columns and how many files it has."""
    detail = spark.sql(f"DESCRIBE DETAIL {delta_ref(location)}").collect()[0]
    return list(detail["clusteringColumns"]), detail["numFiles"]


def test_optimize_clusters_a_table_in_one_commit_that_changes_no_row(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql(
        "CREATE TABLE events (Id BIGINT, kind STRING) CLUSTER BY (id) COMMENT 'e';"
        "ALTER TABLE events SET PROPERTIES ('change_tracking' = 'true');"
        "INSERT INTO events VALUES (1, 'a'), (4, 'b');"
        "INSERT INTO events VALUES (2, 'c'), (5, 'd'), (3, 'e')"
    )
    entry = lake.catalog.get(TableEntry, "events")
    assert entry.cluster_by == ("Id",)
    location = entry.location
    clustering, files = layout(spark, location)
    assert (clustering, files > 1) == (["Id"], True)
    before = rows(lake, "SELECT * FROM events ORDER BY Id")

    assert message(lake, "OPTIMIZE events") == (
        "OPTIMIZE: 0 inserted, 0 updated, 0 deleted; events is at version 4 with 5 rows"
    )
    assert layout(spark, location) == (["Id"], 1)
    assert rows(lake, "SELECT * FROM events ORDER BY Id") == before
    entry = lake.catalog.get(TableEntry, "events")
    assert (entry.version, entry.row_count) == (latest_version(spark, location), 5)
    assert rows(lake, "DESC HISTORY events")[0][2:] == ("OPTIMIZE", 0, 0, 0)
    # Readers of the table's changes see no row from it: its commit changes no data.
    feed = f"table_changes_by_path('{location}', 4)"
    assert spark.sql(f"SELECT COUNT(*) FROM {feed}").collect()[0][0] == 0
    assert message(lake, "OPTIMIZE events") == "OPTIMIZE: no change to events"

    assert message(lake, "ALTER TABLE events CLUSTER BY NONE") == (
        "table events is not clustered: OPTIMIZE events only compacts its small files"
    )
    assert layout(spark, location) == ([], 1)
    assert lake.catalog.get(TableEntry, "events").cluster_by == ()
    assert [row[4] for row in rows(lake, "DESC TABLE events")] == [None, None]
    assert message(lake, "ALTER TABLE events CLUSTER BY (KIND)") == (
        "table events is clustered by (kind): OPTIMIZE events lays out by them the files not yet "
        "clustered (writes alone do not), OPTIMIZE events FULL every file"
    )
    assert layout(spark, location) == (["kind"], 1)
    # The one file was clustered by Id: only FULL lays it out again.
    assert message(lake, "OPTIMIZE events") == "OPTIMIZE: no change to events"
    assert message(lake, "OPTIMIZE events FULL") == (
        "OPTIMIZE: 0 inserted, 0 updated, 0 deleted; events is at version 7 with 5 rows"
    )


def test_optimize_compacts_a_dynamic_table_and_its_refreshes_go_on(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql(
        "CREATE TABLE t (k STRING, v INT); INSERT INTO t VALUES ('a', 1), ('b', 2);"
        "CREATE DYNAMIC TABLE s REFRESH_MODE = INCREMENTAL AS "
        "SELECT k, SUM(v) AS total FROM t GROUP BY k;"
        "INSERT INTO t VALUES ('c', 3), ('d', 4); REFRESH DYNAMIC TABLE s"
    )
    location = lake.catalog.get(DynamicTableEntry, "s").location
    files = layout(spark, location)[1]
    assert files > 1
    version = latest_version(spark, location) + 1
    assert message(lake, "OPTIMIZE s") == (
        f"OPTIMIZE: 0 inserted, 0 updated, 0 deleted; s is at version {version} with 4 rows"
    )
    assert layout(spark, location) == ([], 1)
    assert lake.catalog.get(DynamicTableEntry, "s").version == version
    lake.sql("INSERT INTO t VALUES ('a', 10), ('e', 5)")
    assert message(lake, "REFRESH DYNAMIC TABLE s").startswith("REFRESH INCREMENTAL: ")
    assert rows(lake, "SELECT k, total FROM s ORDER BY k") == [
        ("a", 11),
        ("b", 2),
        ("c", 3),
        ("d", 4),
        ("e", 5),
    ]
