"""A Kafka pipe's sensor: every BATCH_INTERVAL_IN_SECONDS it observes the topic, plans the next
batch from its offsets (no Spark) and requests the run that loads it, once per batch (again
after a failed run: the same range)."""

from __future__ import annotations

from typing import Any

from dagster import (
    DefaultSensorStatus,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import minimum_interval
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.kafka.batches import plan
from lake_assets.pipes.kafka.topics import topic_observation
from lake_assets.pipes.sensors import (
    UNFINISHED,
    batch_request,
    ingest_run_config,
    running_pipe,
)


def batch_key(pipe: PipeEntry, number: int) -> str:
    """Batch `number` of this pipe as created: Dagster runs each key once."""
    return f"{pipe.name}@{pipe.created_at}#{number}"


def kafka_pipe_sensor(pipe: PipeEntry, job: Any, settings: LakeSettings) -> SensorDefinition:
    """Compares the topic's latest offsets with the pipe's last batch; never starts Spark."""

    @sensor(
        name=pipe.name,
        job=job,
        minimum_interval_seconds=minimum_interval(pipe.batch_interval_seconds),
        default_status=DefaultSensorStatus.RUNNING,
        description=f"pipe {pipe.name} (Kafka topic {pipe.topic}): {pipe.copy_statement}",
    )
    def watch(context: SensorEvaluationContext) -> SensorResult | SkipReason:
        state = running_pipe(settings, pipe.name)
        if isinstance(state, SkipReason):
            return state
        catalog, current = state
        try:
            observed = [topic_observation(settings, current)]
            batch = plan(catalog, settings, current)
        except LakeError as error:
            return SkipReason(str(error))
        if batch is None:
            return SensorResult(skip_reason="no new messages", asset_events=observed)
        # A run not finished yet loads this batch (it was planned before), or plans its own.
        waiting = RunsFilter(job_name=job.name, statuses=UNFINISHED)
        if context.instance.get_runs(waiting, limit=1):
            return SensorResult(
                skip_reason=f"batch {batch.number} planned; a run of {job.name} is under way",
                asset_events=observed,
            )
        request = batch_request(
            context.instance,
            batch_key(current, batch.number),
            ingest_run_config(current.table, current.name),
        )
        if isinstance(request, str):
            return SensorResult(
                skip_reason=f"batch {batch.number}; {request}", asset_events=observed
            )
        return SensorResult(run_requests=[request], asset_events=observed)

    return watch
