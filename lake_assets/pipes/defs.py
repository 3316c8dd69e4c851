"""Pipes → a sensor per pipe that requests runs of its target table's ingestion asset.

No `from __future__ import annotations` here: Dagster reads the op's config class at runtime."""

from collections import defaultdict
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetsDefinition,
    AssetSpec,
    Config,
    Definitions,
    MaterializeResult,
    MetadataValue,
    define_asset_job,
    multi_asset,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.core.states import IngestMode, LoadStatus
from lake_assets.pipes.engine import ingest, pipe_copy
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.sensors import event_pipe_sensor, pipe_sensor
from lake_assets.tables.defs import TABLES_GROUP, table_metadata
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.defs import volume_key
from lake_assets.volumes.entry import VolumeEntry
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

FILES_CHECK = "files_load"
OBJECT_TAG = "lake/object"


class IngestConfig(Config):
    """Set by EVENT_NOTIFICATION sensors; a manual run leaves it empty and lists the volumes."""

    pipe: str | None = None  # load only this pipe (default: every running pipe of the table)
    files: list[str] | None = None  # the pipe's volume paths to load (default: list the volume)


def ingestion_asset(table: TableEntry, pipes: list[PipeEntry]) -> AssetsDefinition:
    """The table, materialized by loading its running pipes' pending files (a commit per pipe)."""

    @multi_asset(
        name=f"ingest_{table.name}",
        specs=[
            AssetSpec(
                key=table.name,
                description=table.comment,
                group_name=TABLES_GROUP,
                kinds={"delta", "spark"},
                metadata=table_metadata(table),
                deps=[volume_key(pipe.volume) for pipe in pipes],
            )
        ],
        check_specs=[
            AssetCheckSpec(FILES_CHECK, asset=table.name, description="no file failed to load")
        ],
    )
    def ingest_table(
        config: IngestConfig, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> MaterializeResult:
        lake = catalog.catalog
        named = [pipe for pipe in pipes if pipe.name == config.pipe]
        if config.pipe is not None and not named:
            raise LakeError(
                f"pipe {config.pipe} does not feed table {table.name}",
                f"name one of its pipes: {', '.join(pipe.name for pipe in pipes)}",
            )
        running = [
            current
            for pipe in named or pipes
            if (current := lake.find(PipeEntry, pipe.name)) and not current.paused
        ]
        outcomes = [
            ingest(
                spark.spark_session,
                lake,
                catalog.settings,
                pipe_copy(pipe),
                pipe.name,
                config.files,
            )
            for pipe in running
        ]
        failed = [r for o in outcomes for r in o.records if r.status == LoadStatus.LOAD_FAILED]
        current = lake.get(TableEntry, table.name)
        return MaterializeResult(
            metadata={
                "rows_loaded": sum(o.rows for o in outcomes),
                "files_loaded": sum(o.count(LoadStatus.LOADED) for o in outcomes),
                "files_failed": len(failed),
                "files_purged": sum(len(o.purged) for o in outcomes),
                "dagster/row_count": MetadataValue.int(current.row_count or 0),
                "lake/version": MetadataValue.int(current.version or 0),
            },
            check_results=[
                AssetCheckResult(
                    check_name=FILES_CHECK,
                    passed=not failed,
                    metadata={
                        "failed_files": MetadataValue.md(
                            "\n".join(f"- `{r.file_path}`: {r.first_error_message}" for r in failed)
                            or "none"
                        )
                    },
                )
            ],
        )

    return ingest_table


def ingestion_job(table: str) -> Any:
    """Runs of one table's ingestion carry its object tag: the instance runs one at a time."""
    return define_asset_job(
        f"ingest_{table}_job", selection=[table], tags={OBJECT_TAG: f"table:{table}"}
    )


def build_defs(catalog: Catalog, settings: LakeSettings) -> Definitions:
    """Per table fed by pipes: its ingestion asset and job, and one sensor per pipe."""
    pipes_by_table: dict[str, list[PipeEntry]] = defaultdict(list)
    for pipe in catalog.entries(PipeEntry):
        if catalog.find(TableEntry, pipe.table) and catalog.find(VolumeEntry, pipe.volume):
            pipes_by_table[pipe.table].append(pipe)
    assets, jobs, sensors = [], [], []
    for table in catalog.entries(TableEntry):
        pipes = pipes_by_table.get(table.name)
        if not pipes:
            continue
        assets.append(ingestion_asset(table, pipes))
        job = ingestion_job(table.name)
        jobs.append(job)
        for pipe in pipes:
            watch = (
                event_pipe_sensor
                if pipe.ingest_mode == IngestMode.EVENT_NOTIFICATION
                else pipe_sensor
            )
            sensors.append(watch(pipe, job, settings))
    return Definitions(assets=assets, jobs=jobs, sensors=sensors)
