"""Catalog tables → Dagster assets, with their schema, row count and Delta version as metadata."""

from __future__ import annotations

from dagster import AssetSpec, Definitions, MetadataValue, TableColumn, TableSchema

from lake_assets.core.catalog import Catalog
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.tables.checks import expectations_check
from lake_assets.tables.entry import TableEntry

TABLES_GROUP = "tables"


def table_metadata(entry: TableEntry) -> dict[str, object]:
    """What the UI shows for a table; read from the catalog, so no Spark is needed."""
    schema = TableSchema(
        columns=[
            TableColumn(
                name=column.name,
                type=column.type,
                description=None if column.comment is None else markdown_text(column.comment),
            )
            for column in entry.columns
        ]
    )
    metadata: dict[str, object] = {
        "dagster/column_schema": schema,
        "lake/location": MetadataValue.path(entry.location),
        "lake/change_tracking": entry.change_tracking,
    }
    if entry.row_count is not None:
        metadata["dagster/row_count"] = MetadataValue.int(entry.row_count)
    if entry.version is not None:
        metadata["lake/version"] = MetadataValue.int(entry.version)
    return metadata


def table_asset_spec(entry: TableEntry) -> AssetSpec:
    """A table written by SQL is an external asset; later, pipes and dynamic tables own theirs."""
    return AssetSpec(
        key=entry.name,
        description=None if entry.comment is None else markdown_text(entry.comment),
        group_name=TABLES_GROUP,
        kinds={"delta", "spark"},
        metadata=table_metadata(entry),
    )


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Every table as an external asset (a kind that writes one, a pipe, supersedes its spec),
    with its expectations as checks."""
    tables = catalog.entries(TableEntry)
    return Definitions(
        assets=[table_asset_spec(entry) for entry in tables],
        asset_checks=[expectations_check(entry) for entry in tables if entry.expectations],
    )
