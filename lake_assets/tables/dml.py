"""INSERT, UPDATE, DELETE and MERGE: one Delta commit each, found again by its commit tag."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import committing
from lake_assets.core.delta import INTERPRETED
from lake_assets.core.entries import StoredRelation
from lake_assets.core.results import Result
from lake_assets.core.spark_errors import retrying_lost_append_races
from lake_assets.core.writes import commit_write
from lake_assets.sql.binding import referenced_tables
from lake_assets.sql.statements import Dml
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expected_dml import write_expected

if TYPE_CHECKING:
    from lake_assets.core.kind import Bound, Context

# A statement whose tables hold fewer rows than this runs with static plans and interpreted
# expressions (as the tests run every statement): on few rows, adaptive execution runs each
# shuffle (Delta's own, rebuilding a table's state, too) as a job of its own, and generating and
# compiling code for each query costs more than it saves. With the product's settings
# (bench/statement_jobs.py --defaults) an UPDATE of a few rows took 4 Spark jobs instead of 7
# and 0.60 s instead of 0.91 s, a MERGE 6 jobs instead of 12 and 0.78 s instead of 1.42 s; an
# UPDATE and a MERGE of 30,000 rows ran 20-25 % faster, of 100,000 rows about as fast, of
# 1,000,000 rows twice as slowly.
SMALL_STATEMENT_ROWS = 50_000
SMALL_STATEMENT_CONF = {"spark.sql.adaptive.enabled": "false", **INTERPRETED}


def execute_dml(session: Context, stmt: Dml) -> Result:
    table = session.catalog.find_relation(stmt.target)
    if isinstance(table, TableEntry) and table.expectations and stmt.operation != "DELETE":
        return write_expected(session, stmt, table)
    bound = session.bind(stmt)  # before Spark: unknown names fail without a JVM
    return session.committing(
        stmt.target, lambda: run_dml(session.spark, session.catalog, stmt, bound)
    )


def run_dml(spark: SparkSession, catalog: Catalog, stmt: Dml, bound: Bound) -> Result:
    """Run a bound DML statement, consuming the streams it reads."""
    conf = small_statement_conf(catalog, stmt)

    def write(location: str, record: dict[str, Any]) -> None:
        with committing(spark, record, conf=conf):
            retrying_lost_append_races(lambda: spark.sql(bound.sql).collect())

    # A schema change cut off from its record is recorded before this write's newer version.
    target = recorded_schema(catalog, catalog.get(TableEntry, stmt.target))
    return commit_write(spark, catalog, target, stmt.operation, bound.consuming, write)


def small_statement_conf(catalog: Catalog, stmt: Dml) -> dict[str, str]:
    """Small-statement settings when the catalog's row counts show the statement's tables are
    small; none when it reads files, streams or a relation of a size the catalog does not know."""
    if stmt.sources:
        return {}
    rows = 0
    for name in referenced_tables(stmt.expression):
        relation = catalog.relation(name)
        if not isinstance(relation, StoredRelation) or relation.row_count is None:
            return {}
        rows += relation.row_count
    return SMALL_STATEMENT_CONF if rows < SMALL_STATEMENT_ROWS else {}
