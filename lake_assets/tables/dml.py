"""INSERT, UPDATE, DELETE and MERGE: one Delta commit each, found again by its commit tag."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.commits import committing
from lake_assets.core.results import Result
from lake_assets.core.spark_errors import Failure, retrying
from lake_assets.core.writes import commit_write
from lake_assets.sql.statements import Dml
from lake_assets.tables.entry import TableEntry

if TYPE_CHECKING:
    from lake_assets.core.kind import Bound, Context

# Tries after the first, each after twice the wait of the one before (0.2 s … 3.2 s).
_RETRIES, _FIRST_WAIT_SECONDS = 5, 0.2


def execute_dml(session: Context, stmt: Dml) -> Result:
    bound = session.bind(stmt)  # before Spark: unknown names fail without a JVM
    return session.committing(
        stmt.target, lambda: run_dml(session.spark, session.catalog, stmt, bound)
    )


def run_dml(spark: SparkSession, catalog: Catalog, stmt: Dml, bound: Bound) -> Result:
    """Run a bound DML statement, consuming the streams it reads."""

    def write(location: str, record: dict[str, Any]) -> None:
        with committing(spark, record):
            retrying_lost_append_races(lambda: spark.sql(bound.sql).collect())

    target = catalog.get(TableEntry, stmt.target)
    return commit_write(spark, catalog, target, stmt.operation, bound.consuming, write)


def retrying_lost_append_races(run: Callable[[], object]) -> None:
    """Run a statement again (reading the table afresh) when it lost its commit only to another
    writer's append, so that both succeed; a true conflict (two writers rewriting the same
    files) still fails at once, with the "run it again" error."""
    retrying(
        run,
        when=lambda failure: Failure.LOST_APPEND_RACE in failure,
        attempts=_RETRIES + 1,
        first_wait=_FIRST_WAIT_SECONDS,
    )
