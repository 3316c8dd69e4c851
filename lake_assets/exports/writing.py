"""How an export writes a range's records, replacing those an earlier export of the range
wrote: one Delta commit overwriting the range for a table, one atomic put of
`<range>/changelog.<ext>` for a volume. A small export's records come into this process as Arrow
and are written there; a larger one's are written by Spark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaProtocolError
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from lake_assets.core.commits import find, new_record, writer_options
from lake_assets.core.delta import local_table
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.core.writes import record_commit_state
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.grammar import TimeRange
from lake_assets.exports.records import OP_TYPE, OpType
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.enforcing import refuse_expectations
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import file_name, put_single, staged, staged_parquet, store_of

# The first key of an export's commit record (to a table) or its file's tag.
EXPORT_MARKER = "lake_export"

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

# The most records an export brings into this process (some 100 MB of Arrow) to write them
# itself, with delta-rs to a local table or pyarrow to a Parquet file; more are written by Spark.
_IN_PROCESS = 1_000_000


@dataclass(frozen=True)
class Records:
    """A range's records to write, and at most how many there are (None: not known)."""

    frame: DataFrame
    at_most: int | None

    @property
    def few(self) -> bool:
        """Few enough to bring into this process as Arrow, where writing them skips Spark's
        per-write planning (a few hundred milliseconds)."""
        return self.at_most is not None and self.at_most <= _IN_PROCESS


def to_table(
    session: Context, export: ExportEntry, window: TimeRange, records: Records
) -> dict[str, int]:
    """Replace the range's records in the export's table in one commit."""
    assert export.to_table is not None
    catalog, spark = session.catalog, session.spark
    target = recorded_schema(catalog, catalog.get(TableEntry, export.to_table))
    refuse_expectations(target, f"changelog export {export.name}")
    ensure_log_intact(target)
    in_range = f"version >= {window.start} AND version < {window.end}"
    record = new_record(EXPORT_MARKER, export=export.name, range=window.label)
    folder = local_table(target.location)
    written = None
    if folder is not None and records.few:
        written = _replaced_in_process(folder, records.frame, in_range, record)
    if written is None:
        observed, counts = _counted(records.frame)
        observed.write.format("delta").mode("overwrite").option("replaceWhere", in_range).options(
            **writer_options(record)
        ).save(target.location)
        written = counts()
    commit = find(spark, target.location, record, after=target.version or 0)
    if commit is None:  # nothing to add or remove: Delta commits nothing
        return written
    # REPLACE WHERE: the range's records before are deleted, the new ones written.
    deleted = int(commit.operation_metrics.get("numDeletedRows", -1))
    changes = (sum(written.values()), 0, deleted) if deleted >= 0 else None
    record_commit_state(spark, catalog, target, commit.version, changes)
    return written


def _replaced_in_process(
    folder: Path, frame: DataFrame, in_range: str, record: dict[str, Any]
) -> dict[str, int] | None:
    """The records, brought to this process as Arrow and written by delta-rs: a few hundred
    milliseconds less than Spark's REPLACE WHERE, which plans a DELETE of its own first. None,
    having written nothing, when a table feature keeps delta-rs from writing the table or another
    writer committed first: Spark then writes them, with its own conflict checks and retries."""
    records = frame.toArrow()
    try:
        write_deltalake(
            str(folder),
            records,
            mode="overwrite",
            predicate=in_range,
            commit_properties=CommitProperties(custom_metadata=writer_options(record)),
        )
    except (DeltaProtocolError, CommitFailedError):
        return None
    return _op_counts(records)


def _op_counts(records: pa.Table) -> dict[str, int]:
    return {op["values"]: op["counts"] for op in pc.value_counts(records[OP_TYPE]).to_pylist()}


def to_volume(
    session: Context, export: ExportEntry, window: TimeRange, records: Records
) -> dict[str, int]:
    """Put the range's records as one file, `[SUBDIRECTORY/]<range>/changelog.<ext>`, which
    replaces the one an earlier export of the range put there."""
    assert export.to_volume is not None
    volume = session.catalog.get(VolumeEntry, export.to_volume)
    store = store_of(session.catalog, session.settings, volume)
    folder = "/".join(part for part in (export.subdirectory, window.label) if part)
    name = f"{folder}/{file_name('changelog', export.file_format)}"
    writer = f"changelog export {export.name}"
    if export.file_format == "PARQUET" and records.few:
        arrow = records.frame.toArrow()
        with staged_parquet(arrow, session.settings.lake_home / "tmp") as parts:
            put_single(volume, store, name, parts, writer)
        return _op_counts(arrow)
    observed, counts = _counted(records.frame)
    with staged(observed, export.file_format, {}, session.settings) as parts:
        put_single(volume, store, name, parts, writer)
    return counts()


def _counted(frame: DataFrame) -> tuple[DataFrame, Callable[[], dict[str, int]]]:
    """`frame`, counting its records by op type as it is written (no second Spark job), and
    how to read the counts once it has been."""
    observation = Observation()
    observed = frame.observe(
        observation, *(F.count_if(F.col(OP_TYPE) == op.value).alias(op.value) for op in OpType)
    )
    return observed, lambda: {op: int(n) for op, n in observation.get.items() if n}
