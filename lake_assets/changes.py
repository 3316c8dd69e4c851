"""Changes made by `lake sql` reported to the Dagster instance, so that automation sees them.

A table changed by SQL (INSERT, UPDATE, DELETE, MERGE, COPY INTO) or a dynamic table refreshed by
hand gets a runless materialization: the dynamic tables reading it refresh eagerly, as they do
after a pipe's load."""

from __future__ import annotations

import os
from collections.abc import Callable

from dagster import AssetMaterialization, DagsterInstance, MetadataValue, TableColumn, TableSchema

from lake_assets.automation import DATA_VERSION_TAG
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import StoredRelation
from lake_assets.tables.checks import counts_metadata, evaluations


def dagster_reporter(catalog: Catalog) -> Callable[[str], None] | None:
    """A callback that reports a changed table to the instance at DAGSTER_HOME (None if unset)."""
    if not os.environ.get("DAGSTER_HOME"):
        return None

    def report(name: str) -> None:
        entry = catalog.stored(name)
        metadata: dict[str, MetadataValue | str] = {"lake/changed_by": "lake sql"}
        if entry.version is not None:
            metadata["lake/version"] = MetadataValue.int(entry.version)
        if entry.row_count is not None:
            metadata["dagster/row_count"] = MetadataValue.int(entry.row_count)
        metadata.update(schema_metadata(entry))
        metadata.update(counts_metadata(entry))
        # The Delta version is the data version: downstream assets are stale only when it moves.
        tags = {DATA_VERSION_TAG: str(entry.version)} if entry.version is not None else None
        with DagsterInstance.get() as instance:
            instance.report_runless_asset_event(
                AssetMaterialization(name, metadata=metadata, tags=tags)
            )
            # Each expectation's verdict on the same commit (tables.checks).
            for evaluation in evaluations(entry):
                instance.report_runless_asset_event(evaluation)

    return report


def schema_metadata(entry: StoredRelation, committed: bool = True) -> dict[str, MetadataValue]:
    """An event's column schema, and the change of columns its commit made, if it made one
    (`committed`: the event is of the table's newest commit)."""
    shown = entry.shown_columns() or [column.name for column in entry.columns]
    metadata: dict[str, MetadataValue] = {
        "dagster/column_schema": MetadataValue.table_schema(
            TableSchema([TableColumn(c.name, c.type) for c in entry.columns if c.name in shown])
        )
    }
    if committed and entry.schema_version is not None and entry.schema_version == entry.version:
        metadata["lake/schema_change"] = MetadataValue.text(entry.schema_change or "")
    return metadata
