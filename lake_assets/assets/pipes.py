"""Pipes → a sensor per pipe that requests runs of its target table's ingestion asset.

No `from __future__ import annotations` here: Dagster reads the op's config class at runtime."""

import hashlib
import time
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    Config,
    DagsterInstance,
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
from resources.errors import LakeError
from resources.settings import LakeSettings
from resources.spark import DeltaSparkResource
from resources.storage import FileInfo

FILES_CHECK = "files_load"
OBJECT_TAG = "lake/object"
BATCH_TAG = "lake/batch"
RETRY_AFTER_SECONDS = 30
_GAVE_UP = [DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
# A run in these states has not listed the volume yet: it will load the files that came since.
_NOT_YET_LISTED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING]


class IngestConfig(Config):
    """Set by EVENT_NOTIFICATION sensors; a manual run leaves it empty and lists the volumes."""

    pipe: str | None = None  # load only this pipe (default: every running pipe of the table)
    files: list[str] | None = None  # the pipe's volume paths to load (default: list the volume)


def ingest_run_config(table: str, pipe: str, files: list[str]) -> dict[str, Any]:
    """Run config that loads just `files` of one pipe: what its S3 events announced."""
    return {"ops": {f"ingest_{table}": {"config": {"pipe": pipe, "files": files}}}}


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
            if (current := lake.find_object(PipeEntry, pipe.name)) and not current.paused
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


def running_pipe(settings: LakeSettings, name: str) -> tuple[Catalog, PipeEntry] | SkipReason:
    """The pipe as the catalog has it now, or why its sensor skips (dropped or paused)."""
    catalog = Catalog(settings.catalog_path)
    current = catalog.find_object(PipeEntry, name)
    if current is None:
        return SkipReason(f"pipe {name} was dropped")
    if current.paused:
        return SkipReason(
            f"pipe {name} is PAUSED; ALTER PIPE {name} SET PIPE_EXECUTION_PAUSED = FALSE resumes it"
        )
    return catalog, current


def volume_observation(volume: str, listing: list[FileInfo]) -> AssetObservation:
    return AssetObservation(
        asset_key=volume_key(volume),
        metadata=listing_metadata(listing),
        tags={"dagster/data_version": listing_digest(listing)},
    )


def batch_key(pipe: str, files: list[FileInfo]) -> str:
    """The same files (by URL and ETag) make the same run key, so Dagster runs them once."""
    batch = hashlib.sha256("\n".join(f"{f.url}\0{f.etag}" for f in files).encode()).hexdigest()
    return f"{pipe}-{batch[:20]}"


def retry_wait(files: int) -> str:
    """The skip reason while a failed batch waits for its retry."""
    return f"{files} new files; a run of them failed, retrying soon"


def batch_request(
    instance: DagsterInstance,
    pipe: str,
    files: list[FileInfo],
    run_config: dict[str, Any] | None = None,
) -> RunRequest | None:
    """The run that loads a batch of files: asked for once, and again RETRY_AFTER_SECONDS after
    each run of it failed (a crash loses nothing, and must not stall the pipe); None meanwhile."""
    batch = batch_key(pipe, files)
    failed = instance.get_run_records(RunsFilter(tags={BATCH_TAG: batch}, statuses=_GAVE_UP))
    if failed and time.time() - (failed[0].end_time or 0) < RETRY_AFTER_SECONDS:
        return None
    key = f"{batch}-retry{len(failed)}" if failed else batch
    return RunRequest(run_key=key, run_config=run_config or {}, tags={BATCH_TAG: batch})


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
        state = running_pipe(settings, pipe.name)
        if isinstance(state, SkipReason):
            return state
        catalog, current = state
        volume = catalog.get_object(VolumeEntry, current.volume)
        listing = store_of(catalog, settings, volume).list(recursive=volume.recursive)
        observation = volume_observation(volume.name, listing)
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
        request = batch_request(context.instance, pipe.name, pending)
        if request is None:
            return SensorResult(
                skip_reason=retry_wait(len(pending)),
                asset_events=[observation],
            )
        return SensorResult(run_requests=[request], asset_events=[observation])

    return watch
