"""A top-N (`… ORDER BY o LIMIT n [OFFSET m]`, see top.TopN): which rows make the top depends on
every other row, so the rows ranked are kept in a hidden table inside the table's folder (see
stage), maintained by their own plan and brought up to date first; the table's commit writes
only the rows that entered or left the top."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from lake_assets.core import failpoints
from lake_assets.core.delta import Commit
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.operators.base import Operator, Plan, Root, Stage
from lake_assets.dynamic_tables.operators.stage import bring_up, hidden_write
from lake_assets.dynamic_tables.top import TopN as Ranking
from lake_assets.dynamic_tables.writing import Write, write_difference

RANKED_FOLDER = "_lake_ranked"
# Where tests kill this process between the ranked rows' commit and the table's.
RANKED_AFTER_COMMIT = "ranked-after-commit"
_RANKED_VIEW = hidden("ranked")
_TOP = (
    "the rows below are kept in a hidden table; the top rows are read from it, and only rows "
    "that enter or leave the top are written"
)


def ranked_location(location: str) -> str:
    return f"{location.rstrip('/')}/{RANKED_FOLDER}"


@dataclass(frozen=True)
class TopN(Root):
    """The top rows of `ranked` (the query without its ORDER BY, LIMIT and OFFSET)."""

    ranking: Ranking
    ranked: Plan
    order: str

    @property
    def label(self) -> str:
        return f"Top {self.ranking.limit.sql(dialect='spark')} by {self.order}"

    @property
    def rule(self) -> str:
        return _TOP

    @property
    def children(self) -> tuple[Operator, ...]:
        return (self.ranked.tree,)

    @property
    def reads_changes(self) -> bool:
        return False

    def stages(self) -> tuple[Stage, ...]:
        return self.ranked.stages

    def write(self, job: Write) -> Commit:
        return self._write(job, full=False)

    def write_full(self, job: Write) -> Commit:
        return self._write(job, full=True)

    def _write(self, job: Write, full: bool) -> Commit:
        """Bring the ranked rows to the versions the refresh reads, then write only the rows
        that entered or left the top."""
        location = ranked_location(job.entry.location)
        columns = job.visible + list(self.ranking.hidden)
        bring_up(hidden_write(job, location, columns, self.ranked), self.ranked, full)
        failpoints.reached(RANKED_AFTER_COMMIT)
        return write_difference(job, self._top(job, location))

    def _top(self, job: Write, location: str) -> DataFrame:
        """The top rows, read from the ranked rows as they are now."""
        spark = job.spark
        spark.read.format("delta").load(location).createOrReplaceTempView(_RANKED_VIEW)
        return spark.sql(self.ranking.top(_RANKED_VIEW, job.visible)).toDF(*job.visible)
