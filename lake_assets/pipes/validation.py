"""COPY … VALIDATION_MODE: the files a COPY would load, checked as it would load them, with nothing
written and nothing recorded."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.copy_grammar import CopyIntoTable
from lake_assets.pipes.copy_options import CONTINUE, Validation
from lake_assets.pipes.diagnose import record_problem
from lake_assets.pipes.headers import Layouts, read_layouts
from lake_assets.pipes.loading import target_columns
from lake_assets.pipes.parsing import first_records, sorting_out
from lake_assets.pipes.planning import plan_files
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import source_files, store_of
from resources.storage import FileInfo, VolumeStore

ERROR_COLUMNS = ["file_path", "row_number", "column_name", "error", "raw_record"]


def validate(
    spark: SparkSession,
    catalog: Catalog,
    settings: LakeSettings,
    copy: CopyIntoTable,
    validation: Validation,
) -> Result:
    """RETURN_ERRORS: every record that would be rejected (the first 1,000 of a file) and every
    file that would fail whole, in file order; RETURN_<n>_ROWS: the first n records as they
    would load, or one line naming the first that would not."""
    table = catalog.get(TableEntry, copy.table)
    volume = catalog.get(VolumeEntry, copy.source.volume)
    store = store_of(catalog, settings, volume)
    files = source_files(copy.source, volume, store)
    pending = plan_files(
        catalog, table.name, files, settings.load_history_days,
        force=copy.force, reload_changed=copy.reload_changed,
    ).pending  # fmt: skip
    local = {store.spark_path(info.relative_path): info for info in pending}
    columns = target_columns(table, copy.source)
    if not local:
        return Result(ERROR_COLUMNS if validation.rows is None else [c.name for c in table.columns])
    layouts = read_layouts(spark, copy.source, store, columns, list(local), copy.match_by_name)
    if validation.rows is not None:
        return _first_rows(spark, copy, store, table, columns, local, layouts, validation.rows)
    return _errors(spark, copy, store, columns, local, layouts)


def _first_rows(
    spark: SparkSession,
    copy: CopyIntoTable,
    store: VolumeStore,
    table: TableEntry,
    columns: tuple[Column, ...],
    local: dict[str, FileInfo],
    layouts: Layouts | None,
    count: int,
) -> Result:
    records = first_records(
        spark, copy.source, store, table.columns, columns, list(local), count, layouts
    )
    for path, number, raw, _ in records:
        if raw is not None:
            _, problem = record_problem(copy.source, (layouts or {}).get(path, columns), raw)
            raise LakeError(
                f"record {number} of {local[path].url} would not load: {problem}",
                "fix the file, or see every such record with VALIDATION_MODE = RETURN_ERRORS",
            )
    return Result([c.name for c in table.columns], [values for *_, values in records])


def _errors(
    spark: SparkSession,
    copy: CopyIntoTable,
    store: VolumeStore,
    columns: tuple[Column, ...],
    local: dict[str, FileInfo],
    layouts: Layouts | None,
) -> Result:
    found: list[tuple[str, int | None, str | None, str, str | None]] = []
    with sorting_out(
        spark, copy.source, store, columns, list(local), None, CONTINUE, layouts
    ) as out:
        found += [(local[path].url, None, None, text, None) for path, text in out.problems.items()]
        found += [
            (local[path].url, r.row_number, r.column_name, r.error, r.raw_record)
            for path, (_, kept) in out.rejected.items()
            for r in kept
        ]
    return Result(ERROR_COLUMNS, sorted(found, key=lambda row: (row[0], row[1] or 0)))
