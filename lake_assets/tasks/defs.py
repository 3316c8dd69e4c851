"""Tasks → assets downstream of the streams their statements read, run by one automation sensor:
a task with WHEN when a stream it waits on has versions it has not consumed (a missing partition
of the stream's asset), a task with a cron SCHEDULE on its cron; a task with an interval SCHEDULE
by the intervals sensor, every interval from its creation; a task with neither, or a suspended
one, only by hand (EXECUTE TASK, `dagster asset materialize`, the UI's Materialize)."""

from collections.abc import Iterator, Sequence

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AssetSpec,
    AutomationCondition,
    Definitions,
    MaterializeResult,
    MetadataValue,
    SensorDefinition,
    asset,
)

from lake_assets.automation import AUTOMATION_INTERVAL_SECONDS, automation_sensor, interval_sensor
from lake_assets.changes import dagster_reporter
from lake_assets.core.catalog import Catalog
from lake_assets.core.intervals import Interval
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.tasks.entry import Schedule, TaskEntry, TaskTrigger
from lake_assets.tasks.kind import INTERVALS_SENSOR, TASKS_SENSOR
from lake_assets.tasks.run_history import TaskRunRecord, TaskRunState
from lake_assets.tasks.runs import run_task
from lake_assets.volumes.defs import volume_key
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

TASKS_GROUP = "tasks"
# Runs the tasks and intervals sensors request carry this tag: the run records its trigger as
# SCHEDULED for a task with a SCHEDULE, else STREAM (a task has one condition); a run without it
# is MANUAL.
TRIGGER_TAG = "lake/task_trigger"
AUTOMATIC = "AUTOMATIC"
# After a failed run, a task waiting on streams is retried at the next minute, not every tick.
RETRY_CRON = "* * * * *"


def task_key(name: str) -> AssetKey:
    return AssetKey(["task", name])


def target_key(entry: TaskEntry) -> AssetKey:
    """The asset of the relation or volume the task writes."""
    if entry.target_volume is not None:
        return volume_key(entry.target_volume)
    return AssetKey(entry.target)


def stream_condition(streams: Sequence[str]) -> AutomationCondition:
    """WHEN STREAM_HAS_DATA: run when a watched stream has a missing partition (a version it has
    not delivered) that came after the last request, or, after a failed run, at the next minute
    tick; never while a run is under way. A run consumes every pending version, so versions
    that came before a request are that run's. The run itself checks WHEN's ANDs exactly."""
    watched = AssetSelection.assets(*[AssetKey(name) for name in streams])
    new_versions = AutomationCondition.any_deps_match(AutomationCondition.newly_missing()).allow(
        watched
    )
    backlog = AutomationCondition.any_deps_match(AutomationCondition.missing()).allow(watched)
    # A version seen on the tick right after a request may have come after that run read its
    # streams: it does not count as handled by the request.
    arrived = (new_versions | AutomationCondition.initial_evaluation()).since(
        AutomationCondition.newly_requested() & ~new_versions
    )
    failed = AutomationCondition.execution_failed()
    retry_due = AutomationCondition.cron_tick_passed(RETRY_CRON).since(
        AutomationCondition.newly_requested()
    )
    return (
        backlog & ~AutomationCondition.in_progress() & ((arrived & ~failed) | (failed & retry_due))
    ).with_label("streams have pending versions")


def schedule_condition(schedule: Schedule) -> AutomationCondition | None:
    """A cron SCHEDULE: run at each cron tick; a tick that comes while a run is under way is
    skipped (as Snowflake skips a scheduled run while the previous one runs). An interval has no
    condition: the intervals sensor requests its runs (`intervals_sensor`)."""
    if schedule.cron is None:
        return None
    return (
        AutomationCondition.cron_tick_passed(schedule.cron, schedule.timezone)
        & ~AutomationCondition.in_progress()
    ).with_label(f"SCHEDULE '{schedule.text}'")


def intervals_sensor(entries: list[TaskEntry]) -> list[SensorDefinition]:
    """`SCHEDULE = 'n MINUTE'`: the sensor that runs tasks at exact intervals from their
    creation (automation.interval_sensor), if any task has one; a suspended task's due times
    pass without a run, so that RESUME waits for the next one."""
    intervals = {
        task_key(entry.name): Interval(entry.created_at, entry.schedule.interval_seconds)
        for entry in entries
        if entry.schedule is not None and entry.schedule.interval_seconds is not None
    }
    if not intervals:
        return []
    sensor = interval_sensor(
        INTERVALS_SENSOR,
        "runs each task with an interval SCHEDULE (none while it is suspended)",
        intervals,
        {TRIGGER_TAG: AUTOMATIC},
        suspended=frozenset(task_key(entry.name) for entry in entries if entry.suspended),
    )
    return [sensor]


def task_condition(entry: TaskEntry) -> AutomationCondition | None:
    """A suspended task, or one with neither SCHEDULE nor WHEN, runs only by hand."""
    if entry.suspended:
        return None
    if entry.schedule is not None:
        return schedule_condition(entry.schedule)
    if entry.when:
        return stream_condition(entry.when_streams)
    return None


def _trigger(context: AssetExecutionContext, entry: TaskEntry) -> TaskTrigger:
    if context.run.tags.get(TRIGGER_TAG) != AUTOMATIC:
        return TaskTrigger.MANUAL
    return TaskTrigger.SCHEDULED if entry.schedule is not None else TaskTrigger.STREAM


def _metadata(record: TaskRunRecord) -> dict:
    metadata = {
        "lake/trigger": str(record.trigger),
        "lake/streams": MetadataValue.json(record.streams),
        "duration_seconds": MetadataValue.float(round(record.duration, 3)),
    }
    if record.rows_written is not None:
        metadata["rows_written"] = MetadataValue.int(record.rows_written)
    return metadata


def _described(entry: TaskEntry) -> dict[str, str]:
    described = {"lake/definition": entry.definition, "lake/target": entry.target}
    if entry.schedule is not None:
        described["lake/schedule"] = entry.schedule.text
    if entry.when_text is not None:
        described["lake/when"] = entry.when_text
    return described


def task_asset(entry: TaskEntry, sessions: Sessions) -> AssetsDefinition:
    """The task, run through the Spark resource; its pool and its catalog claim keep two runs
    from overlapping. A run that wrote materializes it; a SKIPPED one does not; FAILED raises."""

    @asset(
        key=task_key(entry.name),
        deps=[AssetKey(name) for name in entry.streams],
        description=markdown_text(entry.comment or f"task: {entry.definition}"),
        group_name=TASKS_GROUP,
        kinds={"spark"},
        automation_condition=task_condition(entry),
        pool=f"task_{entry.name}",
        output_required=False,
        metadata=_described(entry),
    )
    def run(
        context: AssetExecutionContext, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> Iterator[MaterializeResult]:
        lake = catalog.catalog
        session = sessions(
            lake, catalog.settings, lambda: spark.spark_session, changed=dagster_reporter(lake)
        )
        record = run_task(session, entry.name, _trigger(context, entry))
        context.log.info(
            f"task {entry.name}: {record.state} {record.reason or ''} streams {record.streams}"
        )
        if record.state == TaskRunState.SUCCEED:
            yield MaterializeResult(metadata=_metadata(record))

    return run


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Each task as an asset upstream of the table it writes, the sensor that evaluates their
    automation, and the one that runs their interval SCHEDULEs."""
    entries = catalog.entries(TaskEntry)
    sensor = automation_sensor(
        TASKS_SENSOR, TASKS_GROUP, AUTOMATION_INTERVAL_SECONDS, {TRIGGER_TAG: AUTOMATIC}
    )
    # The table or volume a task writes is downstream of it (its own definition, from its kind,
    # takes this dep when the definitions merge).
    targets = [AssetSpec(key=target_key(entry), deps=[task_key(entry.name)]) for entry in entries]
    return Definitions(
        assets=[*(task_asset(entry, sessions) for entry in entries), *targets],
        sensors=[*([sensor] if entries else []), *intervals_sensor(entries)],
    )
