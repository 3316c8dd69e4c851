"""Hidden Delta tables inside a dynamic table's folder (Delta and VACUUM leave names starting
with `_` alone): a top-N's ranked rows (see top_n) and the stages a query reads (see stages).
Each is maintained like a dynamic table by its own plan and carries its own record of the
source versions it reflects, so a crash between its commit and the table's costs nothing: the
next refresh starts it from its own record."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from pyspark.sql import SparkSession

from lake_assets.core import failpoints
from lake_assets.core.commits import fence_at
from lake_assets.core.delta import (
    is_table,
    latest_version,
    quote_name,
    remove_location,
    table_properties,
)
from lake_assets.core.entries import Column
from lake_assets.dynamic_tables.operators.base import Plan, Stage
from lake_assets.dynamic_tables.refreshes import REFRESH_MARKER, Read, RefreshCommit, RefreshMode
from lake_assets.dynamic_tables.runtime.queries import references, rewrite
from lake_assets.dynamic_tables.runtime.sources import (
    SourceRead,
    register_sources,
    schema_of,
    table_at,
    view_or_self,
)
from lake_assets.dynamic_tables.runtime.writing import Phases, Write, write_full
from lake_assets.tables.engine import create_delta_table

STAGES_FOLDER = "_lake_stages"
# Where tests kill this process between a stage's commit and the table's.
STAGE_AFTER_COMMIT = "stage-after-commit"
_MAPPING = "delta.columnMapping.mode"
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def hidden_write(
    job: Write, location: str, columns: list[str], plan: Plan, feed: bool = False
) -> Write:
    """A hidden table's own write: its table (made when missing, or made anew when an earlier
    version laid it out otherwise), fenced on it, reading the sources its query names from the
    versions its last record names up to the refresh's."""
    spark, entry = job.spark, job.entry
    read_names = {table.name.lower() for table in references(plan.query)}
    read_names |= {stage.name for stage in plan.all_stages()}  # a top-N reads its ranked rows
    reads = [read for read in job.reads if read.name in read_names]
    hidden = replace(
        entry,
        location=location,
        columns=tuple(Column(name, "") for name in columns),
        hidden=plan.hidden,
        expectations=(),  # the table's own rows are judged, not a stage's
    )
    _prepare(job, location, [*columns, *plan.hidden], plan, reads, feed)
    version = latest_version(spark, location)
    app_id = f"lake-hidden-{location.rstrip('/').rsplit('/', 1)[-1]}"
    fence, found = fence_at(spark, location, app_id, REFRESH_MARKER, version)
    consumed = RefreshCommit.from_json(found[1]).sources if found is not None else {}
    reads = [replace(read, previous=_previous_version(consumed, read)) for read in reads]
    metadata = RefreshCommit(
        job.metadata.trigger,
        job.metadata.start,
        {read.name: Read(read.location, read.version) for read in reads},
        mode=RefreshMode.FULL,
    )
    return Write(spark, hidden, plan.stateful, plan.hidden, reads, fence, metadata, job.phases)


def bring_up(rows: Write, plan: Plan, full: bool) -> int:
    """The hidden table at the versions the refresh reads: in full when `full` or when it has
    no record of its sources yet, from their changes when they changed; its version then."""
    if full or any(read.previous is None for read in rows.reads):
        return write_full(rows, only_differences=False).version
    if any(read.changed for read in rows.reads):
        return plan.write(rows, full=False).version
    return rows.dt_version


def _previous_version(consumed: dict[str, Read], read: SourceRead) -> int | None:
    """The version a record says was read of the table `read` reads, if it read that one."""
    last = consumed.get(read.name)
    return last.of(read.location) if last is not None else None


def _prepare(
    job: Write, location: str, names: list[str], plan: Plan, reads: list[SourceRead], feed: bool
) -> None:
    """The hidden table with the columns the plan keeps, empty when made; with `feed` its
    change data feed on, for a query that reads its changes."""
    spark = job.spark
    if is_table(spark, location):
        if table_at(spark, location, latest_version(spark, location)).columns == names:
            return
        remove_location(location)
    register_sources(spark, reads, changes=False)
    fields = schema_of(spark, plan.stateful, reads)
    definitions = [
        f"{quote_name(name)} {field.dataType.simpleString()}"
        for name, field in zip(names, fields, strict=True)
    ]
    mapping = table_properties(spark, job.entry.location).get(_MAPPING)
    if not all(map(_PLAIN_NAME.match, names)):
        mapping = "name"
    properties = {_MAPPING: mapping} if mapping else {}
    if feed:
        properties["delta.enableChangeDataFeed"] = "true"
    create_delta_table(spark, location, definitions, None, properties)


def stage_location(location: str, stage: Stage) -> str:
    """A stage's table, named by its query and by how its plan lays it out: laid out otherwise
    (by another version of the engine), it is a new table, which the query reads anew."""
    layout = ",".join([*stage.columns, *stage.plan.hidden])
    digest = hashlib.sha256(layout.encode()).hexdigest()[:8]
    return f"{location.rstrip('/')}/{STAGES_FOLDER}/{stage.name}_{digest}"


def write_stages(job: Write, plan: Plan, consumed: dict[str, Read], full: bool) -> list[SourceRead]:
    """Bring every stage of the plan up to the versions the refresh reads, each after the
    stages it reads; their reads for the query, from the versions `consumed` (the last
    refresh's record) names."""
    reads = list(job.reads)
    staged: list[SourceRead] = []
    for stage in plan.all_stages():
        location = stage_location(job.entry.location, stage)
        own = replace(job, reads=reads, phases=Phases())  # the refresh counts them as "stages"
        rows = hidden_write(own, location, list(stage.columns), stage.plan, feed=True)
        version = bring_up(rows, stage.plan, full)
        failpoints.reached(STAGE_AFTER_COMMIT)
        last = consumed.get(stage.name)
        previous = last.of(location) if last is not None else None
        read = SourceRead(stage.name, location, stage.columns, version, previous, len(reads))
        reads.append(read)
        staged.append(read)
    return staged


def stage_views(spark: SparkSession, plan: Plan, reads: list[SourceRead]) -> None:
    """Each stage as a view of its query over the sources now (what it holds once brought up),
    so that the query's columns are known before any stage is."""
    register_sources(spark, reads, changes=False)
    by_name = {read.name: read for read in reads}
    for stage in plan.all_stages():
        sql = rewrite(stage.plan.query, lambda _, name: view_or_self(by_name, name, "new"))
        spark.sql(sql).createOrReplaceTempView(stage.name)
