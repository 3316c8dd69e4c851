"""EVENT_NOTIFICATION pipes → a sensor that turns S3 events from SQS into runs for those files."""

from __future__ import annotations

import json
import time
from typing import Any

from dagster import (
    DefaultSensorStatus,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from lake_assets.assets.pipes import (
    batch_request,
    ingest_run_config,
    retry_wait,
    running_pipe,
    volume_observation,
)
from lake_assets.engine.notifications import look
from resources.entries import PipeEntry
from resources.errors import LakeError
from resources.settings import LakeSettings


def event_pipe_sensor(pipe: PipeEntry, job: Any, settings: LakeSettings) -> SensorDefinition:
    """Reads the queue each tick and lists the volume every BACKFILL_INTERVAL; never starts Spark.

    The cursor keeps when the volume was last listed: `{"listed_at": <epoch seconds>}`."""

    @sensor(
        name=pipe.name,
        job=job,
        minimum_interval_seconds=pipe.poll_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description=f"pipe {pipe.name} (S3 events from SQS): {pipe.copy_statement}",
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
        observed = (
            [] if seen.listing is None else [volume_observation(current.volume, seen.listing)]
        )
        if not seen.pending:
            return SensorResult(skip_reason="no new files", cursor=cursor, asset_events=observed)
        paths = [info.relative_path for info in seen.pending]
        config = ingest_run_config(current.table, pipe.name, paths)
        request = batch_request(context.instance, pipe.name, seen.pending, config)
        if request is None:
            # The events are consumed: the next listing (BACKFILL_INTERVAL) finds these files.
            return SensorResult(
                skip_reason=retry_wait(len(paths)), cursor=cursor, asset_events=observed
            )
        return SensorResult(run_requests=[request], cursor=cursor, asset_events=observed)

    return watch
