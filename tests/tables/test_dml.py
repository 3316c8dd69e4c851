"""Which settings a DML statement runs with: static plans and interpreted expressions on tables
the catalog counts as small, Spark's own elsewhere."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import session_conf
from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession
from lake_assets.sql.statements import Dml
from lake_assets.tables.dml import SMALL_STATEMENT_CONF, SMALL_STATEMENT_ROWS, small_statement_conf
from lake_assets.tables.entry import TableEntry
from tests.core.catalog_helpers import entry


def conf_for(catalog: Catalog, text: str) -> dict[str, str]:
    statement = parse_statement(text)
    assert isinstance(statement, Dml)
    return small_statement_conf(catalog, statement)


def test_only_statements_on_tables_counted_small_get_the_small_settings(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    for name, rows in (("small", 3), ("other", SMALL_STATEMENT_ROWS - 4), ("large", 10**6)):
        catalog.record_table_state(catalog.add(entry(name)), 1, rows)
    catalog.add(entry("uncounted"))

    assert conf_for(catalog, "UPDATE small SET amount = 1 WHERE id = 2") == SMALL_STATEMENT_CONF
    assert conf_for(catalog, "INSERT INTO small SELECT * FROM other") == SMALL_STATEMENT_CONF
    catalog.record_table_state(catalog.get(TableEntry, "small"), 2, 4)
    assert conf_for(catalog, "INSERT INTO small SELECT * FROM other") == {}  # one row too many
    assert conf_for(catalog, "DELETE FROM large WHERE id = 1") == {}
    merge = "MERGE INTO small USING large ON small.id = large.id WHEN MATCHED THEN DELETE"
    assert conf_for(catalog, merge) == {}
    assert conf_for(catalog, "UPDATE uncounted SET amount = 1") == {}
    assert conf_for(catalog, "INSERT INTO small SELECT 1, 2.0 FROM DIRECTORY(VOLUME v)") == {}


def test_a_small_update_plans_statically_in_a_session_that_adapts(
    spark: SparkSession, lake: LakeSession
) -> None:
    """Adaptive execution runs each shuffle of Delta's state rebuild as a job of its own: the
    statement's own settings keep the jobs those of a session that never adapts, and the
    session's settings are back afterwards."""
    lake.sql(
        "CREATE TABLE t (id BIGINT, amount DECIMAL(10,2)); INSERT INTO t VALUES (1, 1), (2, 2)"
    )
    context = spark.sparkContext
    jobs = []
    try:
        for adaptive in ("false", "true"):
            with session_conf(spark, {"spark.sql.adaptive.enabled": adaptive}):
                context.setJobGroup(f"update-{adaptive}", "")
                lake.sql("UPDATE t SET amount = amount + 1 WHERE id = 1")
                jobs.append(len(context.statusTracker().getJobIdsForGroup(f"update-{adaptive}")))
                assert spark.conf.get("spark.sql.adaptive.enabled") == adaptive
    finally:
        context._jsc.clearJobGroup()  # type: ignore[union-attr]
    assert jobs[0] == jobs[1] > 0
