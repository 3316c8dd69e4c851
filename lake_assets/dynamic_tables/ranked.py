"""The refresh of a top-N dynamic table (see top.TopN). Its ranked rows live in a hidden Delta
table inside the table's folder (Delta and VACUUM leave names starting with `_` alone), which
carries its own record of the source versions it reflects, so a crash between its commit and
the table's costs nothing: the next refresh starts it from its own record. The table's commit
writes only the rows that entered or left the top."""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame

from lake_assets.core import failpoints
from lake_assets.core.commits import fence_at, new_record
from lake_assets.core.delta import (
    Commit,
    is_table,
    latest_version,
    quote_name,
    remove_location,
    table_properties,
)
from lake_assets.core.entries import Column
from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.incremental import (
    register_sources,
    table_at,
    view_or_self,
)
from lake_assets.dynamic_tables.queries import rewrite, with_hidden
from lake_assets.dynamic_tables.refreshes import REFRESH_MARKER, RefreshMode
from lake_assets.dynamic_tables.top import TopN
from lake_assets.dynamic_tables.writing import (
    Write,
    write_difference,
    write_full,
    write_incremental,
)
from lake_assets.tables.engine import create_delta_table

RANKED_FOLDER = "_lake_ranked"
# Where tests kill this process between the ranked rows' commit and the table's.
RANKED_AFTER_COMMIT = "ranked-after-commit"
_RANKED_VIEW = hidden("ranked")
_MAPPING = "delta.columnMapping.mode"


def ranked_location(location: str) -> str:
    return f"{location.rstrip('/')}/{RANKED_FOLDER}"


def write_top(job: Write, full: bool) -> Commit:
    """Bring the ranked rows to the versions the refresh reads (in full when `full`, or when
    they have no record of their own yet), then write only the rows that entered or left the
    top."""
    rows = _ranked_rows(job, full)
    if full or any(read.previous is None for read in rows.reads):
        write_full(rows, only_differences=False)
    elif any(read.changed for read in rows.reads):
        write_incremental(rows)
    failpoints.reached(RANKED_AFTER_COMMIT)
    top = _top(job, rows.entry.location)
    if not full:
        job.metadata["mode"] = RefreshMode.INCREMENTAL
    return write_difference(job, top)


def _top(job: Write, location: str) -> DataFrame:
    """The top rows, read from the ranked rows as they are now."""
    top, _ = job.plan.ranking
    spark = job.spark
    spark.read.format("delta").load(location).createOrReplaceTempView(_RANKED_VIEW)
    names = [c.name for c in job.entry.columns]
    return spark.sql(top.top(_RANKED_VIEW, names)).toDF(*names)


def _ranked_rows(job: Write, full: bool) -> Write:
    """The ranked rows' own write: their table (made when missing, or made anew when an earlier
    version laid it out otherwise), fenced on it, reading from the versions its last record
    names up to the refresh's."""
    top, plan = job.plan.ranking
    spark, entry = job.spark, job.entry
    location = ranked_location(entry.location)
    names = [c.name for c in entry.columns] + list(top.hidden)
    columns = tuple(Column(name, "") for name in names)
    ranked = replace(entry, location=location, columns=columns, hidden=plan.hidden)
    register_sources(spark, job.reads, changes=False)
    _prepare(job, ranked.location, names + list(plan.hidden), top)
    version = latest_version(spark, location)
    app_id = f"lake-ranked-{entry.location.rstrip('/').rsplit('/', 1)[-1]}"
    fence, found = fence_at(spark, location, app_id, REFRESH_MARKER, version)
    consumed = found[1]["sources"] if found is not None and not full else {}
    reads = [
        replace(read, previous=_previous(consumed.get(read.name), read.location))
        for read in job.reads
    ]
    metadata = new_record(
        REFRESH_MARKER,
        trigger=job.metadata["trigger"],
        start=job.metadata["start"],
        sources={read.name: [read.location, read.version] for read in reads},
        mode=RefreshMode.FULL,
    )
    return Write(spark, ranked, plan, top.rows, reads, fence, metadata, job.phases)


def _previous(consumed: list | None, location: str) -> int | None:
    return consumed[1] if consumed and consumed[0] == location else None


def _prepare(job: Write, location: str, names: list[str], top: TopN) -> None:
    """The ranked rows' table with the columns the plan keeps, empty when made."""
    spark = job.spark
    if is_table(spark, location):
        if table_at(spark, location, latest_version(spark, location)).columns == names:
            return
        remove_location(location)
    by_name = {read.name: read for read in job.reads}
    query = with_hidden(job.plan.ranking[1], top.rows)
    sql = rewrite(query, lambda _, name: view_or_self(by_name, name, "new"))
    fields = spark.sql(sql).schema.fields
    definitions = [
        f"{quote_name(name)} {field.dataType.simpleString()}"
        for name, field in zip(names, fields, strict=True)
    ]
    mapping = table_properties(spark, job.entry.location).get(_MAPPING)
    properties = {_MAPPING: mapping} if mapping else {}
    create_delta_table(spark, location, definitions, None, properties)
