"""Pipes → a sensor per pipe that requests runs of its target table's ingestion asset."""

from __future__ import annotations

import hashlib
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    DagsterRunStatus,
    DefaultSensorStatus,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    multi_asset,
    sensor,
)

from lake_assets.assets.tables import TABLES_GROUP, table_metadata
from lake_assets.assets.volumes import listing_digest, listing_metadata, volume_key
from lake_assets.engine.pipes import ingest, pending_for, pipe_copy
from lake_assets.engine.volumes import store_of
from resources.catalog import Catalog, CatalogResource, TableEntry
from resources.entries import PipeEntry, VolumeEntry
from resources.settings import LakeSettings
from resources.spark import DeltaSparkResource

FILES_CHECK = "files_load"
OBJECT_TAG = "lake/object"
# A run in these states has not listed the volume yet: it will load the files that came since.
_NOT_YET_LISTED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING]


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
    def ingest_table(spark: DeltaSparkResource, catalog: CatalogResource) -> MaterializeResult:
        lake = catalog.catalog
        running = [
            current
            for pipe in pipes
            if (current := lake.find_object(PipeEntry, pipe.name)) and not current.paused
        ]
        outcomes = [
            ingest(spark.spark_session, lake, catalog.settings, pipe_copy(pipe), pipe.name)
            for pipe in running
        ]
        failed = [r for o in outcomes for r in o.records if r.status == "LOAD_FAILED"]
        current = lake.table(table.name)
        return MaterializeResult(
            metadata={
                "rows_loaded": sum(o.rows for o in outcomes),
                "files_loaded": sum(o.count("LOADED") for o in outcomes),
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


def pipe_sensor(pipe: PipeEntry, job: Any, settings: LakeSettings) -> SensorDefinition:
    """Looks at cheap state only (a listing and the load-history index); never starts Spark."""

    @sensor(
        name=pipe.name,
        job=job,
        # The daemon looks at sensors every ~5 s and skips one whose last tick began less than
        # its minimum interval ago: an interval of exactly 5 s would often wait 10 s.
        minimum_interval_seconds=max(1, pipe.poll_interval_seconds - 1),
        default_status=DefaultSensorStatus.RUNNING,
        description=f"pipe {pipe.name}: {pipe.copy_statement}",
    )
    def watch(context: SensorEvaluationContext) -> SensorResult | SkipReason:
        catalog = Catalog(settings.catalog_path)
        current = catalog.find_object(PipeEntry, pipe.name)
        if current is None:
            return SkipReason(f"pipe {pipe.name} was dropped")
        if current.paused:
            return SkipReason(
                f"pipe {pipe.name} is PAUSED; ALTER PIPE {pipe.name} "
                "SET PIPE_EXECUTION_PAUSED = FALSE resumes it"
            )
        volume = catalog.get_object(VolumeEntry, current.volume)
        listing = store_of(catalog, settings, volume).list(recursive=volume.recursive)
        observation = AssetObservation(
            asset_key=volume_key(volume.name),
            metadata=listing_metadata(listing),
            tags={"dagster/data_version": listing_digest(listing)},
        )
        pending = pending_for(catalog, settings, current)
        if not pending:
            return SensorResult(skip_reason="no new files", asset_events=[observation])
        waiting = RunsFilter(job_name=job.name, statuses=_NOT_YET_LISTED)
        if context.instance.get_runs(waiting, limit=1):
            # Another run would queue behind it (one run per table) and find nothing to load.
            return SensorResult(
                skip_reason=f"{len(pending)} new files; the queued run of {job.name} loads them",
                asset_events=[observation],
            )
        batch = hashlib.sha256(
            "\n".join(f"{f.url}\0{f.etag}" for f in pending).encode()
        ).hexdigest()[:20]
        return SensorResult(
            run_requests=[RunRequest(run_key=f"{pipe.name}-{batch}")],
            asset_events=[observation],
        )

    return watch
