"""What the kinds whose assets run by themselves share (dynamic tables, tasks): the sensor that
evaluates one kind's automation conditions, the sensor that runs one kind's objects on their
intervals, the data versions that say when an asset changed, and the load's run that refreshes
its readers."""

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from dagster import (
    AssetKey,
    AssetSelection,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from lake_assets.core.intervals import Interval
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS, minimum_interval

# The tag Dagster reads an event's data version from (a table's Delta version, a volume's listing
# digest): what reads the asset is stale only when it moves.
DATA_VERSION_TAG = "dagster/data_version"

# How often the daemon evaluates automation conditions (Dagster's default is 30 s).
AUTOMATION_INTERVAL_SECONDS = 5


def automation_sensor(
    name: str, group: str, interval_seconds: int, run_tags: dict[str, str]
) -> AutomationConditionSensorDefinition:
    """One sensor per kind, running from the start, so its assets run by themselves; the tags on
    the runs it requests tell a run it was not started by hand."""
    return AutomationConditionSensorDefinition(
        name,
        target=AssetSelection.groups(group),
        minimum_interval_seconds=minimum_interval(interval_seconds),
        run_tags=run_tags,
        default_status=DefaultSensorStatus.RUNNING,
    )


# A run in these states has not ended: a due time of its object that comes meanwhile is skipped.
UNDER_WAY = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def interval_sensor(
    name: str,
    what: str,
    intervals: Mapping[AssetKey, Interval],
    run_tags: Mapping[str, str],
    suspended: frozenset[AssetKey] = frozenset(),
    clock: Callable[[], datetime] = _utc_now,
) -> SensorDefinition:
    """One sensor per kind that requests a run of each object at each due time of its interval,
    once, at the daemon's first look after it (within a loop). A due time that comes while a run
    of the object is queued or under way is skipped, as is one of a `suspended` object; after
    downtime only the latest due time is requested. The cursor keeps, per object, the anchor and
    the last k handled, `{"task/t": {"anchor": "<created_at>", "k": 3}}`: a new anchor (the object
    was replaced) starts again from k = 0. `what` opens its description; `clock` is the time now
    (tests pass their own)."""

    @sensor(
        name=name,
        target=AssetSelection.assets(*intervals),
        minimum_interval_seconds=minimum_interval(DAEMON_LOOP_SECONDS),
        default_status=DefaultSensorStatus.RUNNING,
        description=f"{what}: the k-th run is due at its created_at + k · its interval, and "
        f"requested at the daemon's first look after (every {DAEMON_LOOP_SECONDS} s); a due time "
        "that comes while a run of it is queued or under way is skipped, and after downtime only "
        "the latest one due is requested",
    )
    def request_due_runs(context: SensorEvaluationContext) -> SensorResult:
        now = clock()
        handled = json.loads(context.cursor or "{}")
        cursor, requests, skipped = {}, [], []
        for key, interval in intervals.items():
            label = key.to_user_string()
            last = handled.get(label, {})
            done = last["k"] if last.get("anchor") == interval.anchor else 0
            k = max(done, interval.latest(now))
            cursor[label] = {"anchor": interval.anchor, "k": k}
            if k == done:
                continue
            why = "it is suspended" if key in suspended else under_way(context.instance, key)
            if why is None:
                run_key = f"{label}@{interval.anchor}#{k}"
                requests.append(RunRequest(run_key=run_key, asset_selection=[key], tags=run_tags))
            else:
                skipped.append(f"{label}'s run due at {interval.due(k)} skipped: {why}")
        for line in skipped:
            context.log.info(line)
        return SensorResult(
            run_requests=requests,
            skip_reason=None if requests else "; ".join(skipped) or _next_due(intervals, now),
            cursor=json.dumps(cursor, sort_keys=True),
        )

    return request_due_runs


def under_way(instance: DagsterInstance, key: AssetKey) -> str | None:
    """The newest run planned to materialize `key` (as Dagster's in_progress condition finds it),
    in words, while it is queued or under way; else None."""
    planned = instance.get_latest_planned_materialization_info(key)
    if planned is None:
        return None
    runs = instance.get_runs(RunsFilter(run_ids=[planned.run_id], statuses=UNDER_WAY), limit=1)
    return f"run {planned.run_id[:8]} is {runs[0].status.value}" if runs else None


def _next_due(intervals: Mapping[AssetKey, Interval], now: datetime) -> str:
    """The skip reason of a tick with nothing due: which run comes next, and when."""
    due = {key: interval.due(interval.latest(now) + 1) for key, interval in intervals.items()}
    key = min(due, key=lambda each: due[each])
    return f"no run is due; the next is {key.to_user_string()}'s at {due[key]}"


# An asset that refreshes in the run that loads its source carries this tag (value "true"); a
# load's run (its job tagged LOAD_RUN_TAG, the table's name) takes its table's direct readers
# that carry it, and tags itself with each one's `refreshed_in_load_run` before it reports the
# table, so that their automation counts the load as read by that refresh.
REFRESHES_IN_LOAD_RUN = "lake/refreshes_in_load_run"
LOAD_RUN_TAG = "lake/load_run"


def load_run_selection(table: str) -> AssetSelection:
    """The table and the assets that refresh in its load's run."""
    loaded = AssetSelection.assets(table)
    readers = loaded.downstream(depth=1, include_self=False)
    return loaded | (readers & AssetSelection.tag(REFRESHES_IN_LOAD_RUN, "true"))


def refreshed_in_load_run(key: AssetKey) -> str:
    """The run tag of a load's run that refreshes `key` after the load (see above)."""
    return f"lake/refreshed_in_load_run.{key.to_user_string()}"
