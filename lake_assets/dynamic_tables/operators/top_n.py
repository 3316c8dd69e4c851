"""A top-N (`… ORDER BY o LIMIT n [OFFSET m]`, see top.TopN): which rows make the top depends on
every other row, so the rows ranked are a stage (a hidden table maintained by its own plan and
brought up to date first, see stage); the table's commit writes only the rows that entered or
left the top, read from it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import DataFrame
from sqlglot import exp

from lake_assets.core.delta import Commit
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.analyses.top import TopN as Ranking
from lake_assets.dynamic_tables.analyses.top import top_n
from lake_assets.dynamic_tables.operators.base import Classify, Line, Root, Stage
from lake_assets.dynamic_tables.rewrites.stages import stage_name
from lake_assets.dynamic_tables.runtime.sources import table_at
from lake_assets.dynamic_tables.runtime.writing import Write, write_difference

_RANKED_VIEW = hidden("ranked")
_TOP = (
    "the top rows, read from the rows ranked (a stage); only rows that enter or leave the top "
    "are written"
)


def ranked_column(position: int) -> str:
    """The ranked rows' column of the query's item at `position`."""
    return hidden(f"c_{position}")


@dataclass(frozen=True)
class TopN(Root):
    """The top rows of `ranked`: the query without its ORDER BY, LIMIT and OFFSET, whose rows
    (its items, then the ORDER BY terms it does not select) are a stage."""

    ranking: Ranking
    ranked: Stage
    order: str

    @property
    def label(self) -> str:
        return f"Top {self.ranking.limit.sql(dialect='spark')} by {self.order}"

    @property
    def rule(self) -> str:
        return _TOP

    def lines(self, depth: int = 0) -> Iterator[Line]:
        yield Line(depth, self.label, self.rule)
        yield Line(depth + 1, f"Scan {self.ranked.name}", "reads the stage as it is now")

    @property
    def reads_changes(self) -> bool:
        return False

    def stages(self) -> tuple[Stage, ...]:
        return (self.ranked,)

    def write(self, job: Write) -> Commit:
        """Only the rows that entered or left the top, against the stage brought up first."""
        return write_difference(job, self._top(job))

    def write_full(self, job: Write) -> Commit:
        return self.write(job)

    def _top(self, job: Write) -> DataFrame:
        """The top rows, read from the ranked rows at the version the refresh brought them to."""
        read = job.by_name[self.ranked.name]
        rows = table_at(job.spark, read.location, read.version)
        rows.createOrReplaceTempView(_RANKED_VIEW)
        items = [ranked_column(i) for i in range(len(job.visible))]
        return job.spark.sql(self.ranking.top(_RANKED_VIEW, items)).toDF(*job.visible)


def lower(query: exp.Expr, classify: Classify) -> TopN | str | None:
    """ORDER BY … LIMIT over a query whose rows can be maintained: its ranked rows a stage."""
    top = top_n(query)
    if top is None or isinstance(top, str):
        return top
    ranked = classify(top.rows)
    if ranked.reason:
        return f"{ranked.reason} (the rows ORDER BY … LIMIT ranks)"
    order = ", ".join(term.sql(dialect="spark") for term in query.args["order"].expressions)
    assert isinstance(top.rows, exp.Query), "a top-N ranks the rows of a query"
    items = len(top.rows.selects) - len(top.hidden)
    columns = (*map(ranked_column, range(items)), *top.hidden)
    return TopN(top, Stage(stage_name(top.rows), ranked, columns), order)
