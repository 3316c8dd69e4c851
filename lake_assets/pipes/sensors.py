"""Each pipe is a sensor that looks at cheap state only (a listing, the load-history index, an
SQS queue) and requests runs of its table's ingestion job; it never starts Spark."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import minimum_interval
from lake_assets.pipes.engine import plan_for, polling_text, volume_listing
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.notifications import look
from lake_assets.volumes.defs import read_under_way, volume_observation
from lake_assets.volumes.entry import VolumeEntry
from resources.storage import FileInfo

BATCH_TAG = "lake/batch"
RETRY_AFTER_SECONDS = 30
_GAVE_UP = [DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
# A run in these states has not looked yet (listed the volume, planned its batch): it will load
# what came since.
NOT_YET_STARTED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING]
UNFINISHED = [*NOT_YET_STARTED, DagsterRunStatus.STARTED]


def ingest_run_config(table: str, pipe: str, files: list[str] | None = None) -> dict[str, Any]:
    """Run config that loads one pipe only: just `files`, what its S3 events announced, or
    (a Kafka pipe) its planned batch."""
    return {"ops": {f"ingest_{table}": {"config": {"pipe": pipe, "files": files}}}}


def running_pipe(settings: LakeSettings, name: str) -> tuple[Catalog, PipeEntry] | SkipReason:
    """The pipe as the catalog has it now, or why its sensor skips (dropped or paused)."""
    catalog = Catalog(settings.catalog_location)
    current = catalog.find(PipeEntry, name)
    if current is None:
        return SkipReason(f"pipe {name} was dropped")
    if current.paused:
        return SkipReason(
            f"pipe {name} is PAUSED; ALTER PIPE {name} SET PIPE_EXECUTION_PAUSED = FALSE resumes it"
        )
    if current.invalid_reason:
        return SkipReason(f"pipe {name} stopped: {current.invalid_reason}")
    return catalog, current


def observed(
    instance: DagsterInstance, catalog: Catalog, pipe: PipeEntry, listing: list[FileInfo] | None
) -> list[AssetObservation]:
    """The volume's observation from this tick's listing, unless there was none or a run of the
    table is under way (it observes the volume itself once it has loaded)."""
    if listing is None or read_under_way(instance, [AssetKey(pipe.table)]):
        return []
    return [volume_observation(catalog.get(VolumeEntry, pipe.volume), listing)]


def batch_key(pipe: str, files: list[FileInfo]) -> str:
    """The same files (by URL and ETag) make the same run key, so Dagster runs them once."""
    batch = hashlib.sha256("\n".join(f"{f.url}\0{f.etag}" for f in files).encode()).hexdigest()
    return f"{pipe}-{batch[:20]}"


def batch_request(
    instance: DagsterInstance, batch: str, run_config: dict[str, Any] | None = None
) -> RunRequest | str:
    """The run that loads a batch (files, or a Kafka pipe's planned range): asked for once, and
    again RETRY_AFTER_SECONDS after each run of it failed (a crash loses nothing, and must not
    stall the pipe); meanwhile, why not, for the tick's skip reason."""
    runs = instance.get_run_records(RunsFilter(tags={BATCH_TAG: batch}))
    if runs and runs[0].dagster_run.status not in _GAVE_UP:
        newest = runs[0].dagster_run
        return f"run {newest.run_id[:8]} of this batch is {newest.status.value}"
    failed = [record for record in runs if record.dagster_run.status in _GAVE_UP]
    if failed and time.time() - (failed[0].end_time or 0) < RETRY_AFTER_SECONDS:
        return "the last run failed, retrying soon"
    key = f"{batch}-retry{len(failed)}" if failed else batch
    return RunRequest(run_key=key, run_config=run_config or {}, tags={BATCH_TAG: batch})


def pipe_sensor(pipe: PipeEntry, job: Any, settings: LakeSettings) -> SensorDefinition:
    """Looks at cheap state only (a listing and the load-history index); never starts Spark."""

    @sensor(
        name=pipe.name,
        job=job,
        minimum_interval_seconds=minimum_interval(pipe.poll_interval_seconds),
        default_status=DefaultSensorStatus.RUNNING,
        description=f"pipe {pipe.name}, {polling_text(pipe.poll_interval_seconds)}: "
        f"{pipe.copy_statement}",
    )
    def watch(context: SensorEvaluationContext) -> SensorResult | SkipReason:
        state = running_pipe(settings, pipe.name)
        if isinstance(state, SkipReason):
            return state
        catalog, current = state
        listing = volume_listing(catalog, settings, current)
        observations = observed(context.instance, catalog, current, listing)
        # New files, and loaded files that changed since (the run records that it skips them).
        pending = plan_for(catalog, settings, current, listing).news
        if not pending:
            return SensorResult(skip_reason="no new files", asset_events=observations)
        waiting = RunsFilter(job_name=job.name, statuses=NOT_YET_STARTED)
        if context.instance.get_runs(waiting, limit=1):
            # Another run would queue behind it (one run per table) and find nothing to load.
            return SensorResult(
                skip_reason=f"{len(pending)} new files; the queued run of {job.name} loads them",
                asset_events=observations,
            )
        request = batch_request(context.instance, batch_key(pipe.name, pending))
        if isinstance(request, str):
            return SensorResult(
                skip_reason=f"{len(pending)} new files; {request}",
                asset_events=observations,
            )
        return SensorResult(run_requests=[request], asset_events=observations)

    return watch


def event_pipe_sensor(pipe: PipeEntry, job: Any, settings: LakeSettings) -> SensorDefinition:
    """Reads the queue each tick and lists the volume every BACKFILL_INTERVAL; never starts Spark.

    The cursor keeps when the volume was last listed: `{"listed_at": <epoch seconds>}`."""

    @sensor(
        name=pipe.name,
        job=job,
        minimum_interval_seconds=minimum_interval(pipe.poll_interval_seconds),
        default_status=DefaultSensorStatus.RUNNING,
        description=f"pipe {pipe.name}, S3 events from SQS "
        f"{polling_text(pipe.poll_interval_seconds)}: {pipe.copy_statement}",
    )
    def watch(context: SensorEvaluationContext) -> SensorResult | SkipReason:
        state = running_pipe(settings, pipe.name)
        if isinstance(state, SkipReason):
            return state
        catalog, current = state
        listed_at = float(json.loads(context.cursor or "{}").get("listed_at", 0))
        now = time.time()
        backfill = now - listed_at >= current.backfill_interval_seconds
        try:
            seen = look(catalog, settings, current, backfill)
        except LakeError as error:
            return SkipReason(str(error))
        if seen.ignored:
            context.log.info(
                f"pipe {pipe.name}: deleted {len(seen.ignored)} queue message(s) that are not S3 "
                f"object events, e.g. {seen.ignored[0]}"
            )
        cursor = json.dumps({"listed_at": now if backfill else listed_at})
        observations = observed(context.instance, catalog, current, seen.listing)
        if not seen.pending:
            return SensorResult(
                skip_reason="no new files", cursor=cursor, asset_events=observations
            )
        paths = [info.relative_path for info in seen.pending]
        config = ingest_run_config(current.table, pipe.name, paths)
        request = batch_request(context.instance, batch_key(pipe.name, seen.pending), config)
        if isinstance(request, str):
            # The events are consumed: the next listing (BACKFILL_INTERVAL) finds these files.
            return SensorResult(
                skip_reason=f"{len(paths)} new files; {request}",
                cursor=cursor,
                asset_events=observations,
            )
        return SensorResult(run_requests=[request], cursor=cursor, asset_events=observations)

    return watch
