"""What a piece of Spark work cost, counted from the driver's status stores: the jobs it ran, the
rows its stages read and the files its scans read (the SQL metric every file scan reports; Delta's
own reads of a table's log count too). A bench wraps the work in `counted`, which gives it a job
group of its own."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

_GROUPS = itertools.count()
_FILES_READ = "number of files read"


@dataclass
class Work:
    jobs: int = 0
    rows_read: int = 0
    files_read: int = 0

    def __str__(self) -> str:
        return f"{self.jobs} jobs, {self.files_read} files and {self.rows_read:,} rows read"


@contextmanager
def counted(spark: SparkSession) -> Iterator[Work]:
    """The work done inside, filled in when it ends."""
    context = spark.sparkContext
    group = f"bench-work-{next(_GROUPS)}"
    context.setJobGroup(group, group)
    work = Work()
    try:
        yield work
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        _fill(spark, group, work)


def _fill(spark: SparkSession, group: str, work: Work) -> None:
    jobs = set(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    work.jobs = len(jobs)
    store = spark.sparkContext._jsc.sc().statusStore()  # type: ignore[union-attr]
    jvm, gateway = spark.sparkContext._jvm, spark.sparkContext._gateway  # type: ignore[attr-defined]
    no_quantiles = gateway.new_array(jvm.double, 0)
    stages = {stage_id for job in jobs for stage_id in _seq(store.job(job).stageIds())}
    for stage_id in stages:
        attempts = store.stageData(stage_id, False, jvm.java.util.ArrayList(), False, no_quantiles)
        for stage in _seq(attempts):
            work.rows_read += stage.inputRecords()
    sql = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    for execution in _seq(sql.executionsList()):
        if not {int(job) for job in _seq(execution.jobs().keys().toSeq())} & jobs:
            continue
        values = sql.executionMetrics(execution.executionId())
        for metric in _seq(execution.metrics()):
            text = values.get(metric.accumulatorId()) if metric.name() == _FILES_READ else None
            if text is not None and text.isDefined():
                work.files_read += int(str(text.get()).replace(",", "") or 0)


def _seq(scala: Any) -> list[Any]:
    """A Scala collection's elements (py4j does not iterate them)."""
    return [scala.apply(index) for index in range(scala.size())]
