"""The refresh of a top-N dynamic table (see top.TopN). Its ranked rows live in a hidden table
inside the table's folder (see hidden_tables), brought up to date first; the table's commit
writes only the rows that entered or left the top."""

from __future__ import annotations

from pyspark.sql import DataFrame

from lake_assets.core import failpoints
from lake_assets.core.delta import Commit
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.hidden_tables import bring_up, hidden_write
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.dynamic_tables.writing import Write, write_difference

RANKED_FOLDER = "_lake_ranked"
# Where tests kill this process between the ranked rows' commit and the table's.
RANKED_AFTER_COMMIT = "ranked-after-commit"
_RANKED_VIEW = hidden("ranked")


def ranked_location(location: str) -> str:
    return f"{location.rstrip('/')}/{RANKED_FOLDER}"


def write_top(job: Write, full: bool) -> Commit:
    """Bring the ranked rows to the versions the refresh reads, then write only the rows that
    entered or left the top."""
    top, plan = job.plan.ranking
    location = ranked_location(job.entry.location)
    columns = [c.name for c in job.entry.columns] + list(top.hidden)
    bring_up(hidden_write(job, location, columns, plan), full)
    failpoints.reached(RANKED_AFTER_COMMIT)
    if not full:
        job.metadata["mode"] = RefreshMode.INCREMENTAL
    return write_difference(job, _top(job, location))


def _top(job: Write, location: str) -> DataFrame:
    """The top rows, read from the ranked rows as they are now."""
    top, _ = job.plan.ranking
    spark = job.spark
    spark.read.format("delta").load(location).createOrReplaceTempView(_RANKED_VIEW)
    names = [c.name for c in job.entry.columns]
    return spark.sql(top.top(_RANKED_VIEW, names)).toDF(*names)
