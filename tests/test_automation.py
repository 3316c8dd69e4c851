"""The intervals sensor's decisions, evaluated as the daemon would on an ephemeral instance at
times the test gives: each due time requested once, none while a run of the object is under way
or waiting to start, only the latest after downtime, counted again from a new anchor, none for a
suspended object; no Spark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    SensorResult,
    asset,
    build_sensor_context,
    materialize,
)

from lake_assets.automation import interval_sensor
from lake_assets.core.intervals import Interval
from lake_assets.core.ticks import minimum_interval

KEY = AssetKey(["task", "t"])
CREATED = datetime(2026, 3, 2, 12, 0, 0, 250000, tzinfo=UTC)
ANCHOR = CREATED.isoformat(timespec="milliseconds")
TAGS = {"lake/trigger": "SCHEDULED"}


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


class Looks:
    """The sensor's evaluations one after another, each at the time the test gives, keeping the
    cursor between them as the daemon does."""

    def __init__(
        self,
        instance: DagsterInstance,
        interval: Interval,
        suspended: frozenset[AssetKey] = frozenset(),
    ) -> None:
        self.instance, self.cursor, self.now = instance, None, CREATED
        self.define(interval, suspended)

    def define(self, interval: Interval, suspended: frozenset[AssetKey] = frozenset()) -> None:
        """The sensor as the code location defines it anew after the catalog changed; the daemon
        keeps its cursor."""
        self.sensor = interval_sensor(
            "intervals", "runs t", {KEY: interval}, TAGS, suspended, clock=lambda: self.now
        )

    def at(self, moment: datetime) -> SensorResult:
        self.now = moment
        result = self.sensor(build_sensor_context(instance=self.instance, cursor=self.cursor))
        assert isinstance(result, SensorResult)
        self.cursor = result.cursor
        return result

    def requested(self, moment: datetime) -> list[str]:
        """The run keys requested at `moment` (each names its object, anchor and k)."""
        return [request.run_key or "" for request in self.at(moment).run_requests]

    def handled(self) -> dict[str, Any]:
        return json.loads(self.cursor or "{}")[KEY.to_user_string()]


def message(result: SensorResult) -> str:
    """What the tick says when it requests nothing."""
    assert result.skip_reason is not None
    return result.skip_reason.skip_message or ""


def after(seconds: float) -> datetime:
    return CREATED + timedelta(seconds=seconds)


def key(k: int, anchor: str = ANCHOR) -> str:
    return f"task/t@{anchor}#{k}"


def test_each_due_time_is_requested_once_with_the_kinds_tags(instance: DagsterInstance) -> None:
    looks = Looks(instance, Interval(ANCHOR, 7 * 60))
    quiet = looks.at(after(4))
    assert quiet.run_requests == []
    assert message(quiet) == (
        "no run is due; the next is task/t's at 2026-03-02 12:07:00.250000+00:00"
    )
    assert looks.requested(after(7 * 60 - 1)) == []
    due = looks.at(after(7 * 60 + 3))  # the daemon's first look after 12:07:00.25
    (request,) = due.run_requests
    assert (request.run_key, request.asset_selection, request.tags) == (key(1), [KEY], TAGS)
    assert looks.handled() == {"anchor": ANCHOR, "k": 1}
    assert looks.requested(after(7 * 60 + 8)) == []
    # 12:14:00.25, 12:21:00.25: every 7 minutes from the anchor, not at minutes divisible by 7.
    assert looks.requested(after(14 * 60 + 1)) == [key(2)]
    assert looks.requested(after(20 * 60 + 59)) == []
    assert looks.requested(after(21 * 60 + 4)) == [key(3)]


def test_after_downtime_only_the_latest_due_time_is_requested(instance: DagsterInstance) -> None:
    looks = Looks(instance, Interval(ANCHOR, 60))
    assert looks.requested(after(61)) == [key(1)]
    # The daemon was down from 12:01 to 12:10:30: k 2 to 10 came meanwhile, one run for k 10.
    assert looks.requested(after(630)) == [key(10)]
    assert looks.requested(after(635)) == []
    assert looks.requested(after(661)) == [key(11)]
    # A sensor that never looked before (no cursor) counts as down since the anchor.
    assert Looks(instance, Interval(ANCHOR, 60)).requested(after(3600 + 2)) == [key(60)]


def test_a_new_anchor_counts_again_from_its_own_creation(instance: DagsterInstance) -> None:
    looks = Looks(instance, Interval(ANCHOR, 60))
    assert looks.requested(after(125)) == [key(2)]
    # CREATE OR REPLACE at 12:02:30: the new object's first run is due at 12:03:30, not 12:03.
    replaced = (CREATED + timedelta(seconds=150)).isoformat(timespec="milliseconds")
    looks.define(Interval(replaced, 60))
    assert looks.requested(after(154)) == []
    assert looks.handled() == {"anchor": replaced, "k": 0}
    assert looks.requested(after(182)) == []
    assert looks.requested(after(212)) == [key(1, replaced)]


def test_a_due_time_that_comes_while_a_run_is_under_way_is_skipped(
    instance: DagsterInstance,
) -> None:
    looks = Looks(instance, Interval(ANCHOR, 60))
    seen: dict[str, SensorResult] = {}

    @asset(key=KEY)
    def t() -> None:
        # The run is under way when the next due time comes.
        seen["during"] = looks.at(after(61))

    assert materialize([t], instance=instance).success
    during = seen["during"]
    assert during.run_requests == []
    assert message(during).startswith(
        "task/t's run due at 2026-03-02 12:01:00.250000+00:00 skipped: run "
    )
    assert message(during).endswith(" is STARTED")
    # k 1 is handled (skipped, not late): the next run is k 2's, at its own time.
    assert looks.requested(after(65)) == []
    assert looks.requested(after(121)) == [key(2)]


def test_a_due_time_that_comes_while_a_run_waits_to_start_is_skipped(
    instance: DagsterInstance,
) -> None:
    @asset(key=KEY)
    def t() -> None:
        pass

    job = Definitions(assets=[t]).resolve_implicit_global_asset_job_def()
    waiting = instance.create_run_for_job(job, asset_selection=frozenset({KEY}))
    looks = Looks(instance, Interval(ANCHOR, 60))
    skipped = looks.at(after(62))
    assert skipped.run_requests == []
    assert message(skipped).endswith(f"skipped: run {waiting.run_id[:8]} is NOT_STARTED")
    instance.report_run_canceled(waiting)
    assert looks.requested(after(122)) == [key(2)]


def test_a_suspended_objects_due_times_pass_without_a_run(instance: DagsterInstance) -> None:
    """A suspended task: RESUME then waits for the next due time, not a run at once."""
    looks = Looks(instance, Interval(ANCHOR, 60), suspended=frozenset({KEY}))
    skipped = looks.at(after(125))
    assert skipped.run_requests == []
    assert message(skipped) == (
        "task/t's run due at 2026-03-02 12:02:00.250000+00:00 skipped: it is suspended"
    )
    looks.define(Interval(ANCHOR, 60))  # ALTER TASK t RESUME at 12:02:50
    assert looks.requested(after(170)) == []
    assert looks.requested(after(181)) == [key(3)]


def test_the_sensor_looks_every_daemon_loop_and_says_when_runs_are_due() -> None:
    sensor = interval_sensor("intervals", "runs each task", {KEY: Interval(ANCHOR, 60)}, TAGS)
    assert sensor.minimum_interval_seconds == minimum_interval(5) == 4
    assert sensor.description == (
        "runs each task: the k-th run is due at its created_at + k · its interval, and requested "
        "at the daemon's first look after (every 5 s); a due time that comes while a run of it is "
        "queued or under way is skipped, and after downtime only the latest one due is requested"
    )


def test_an_interval_stored_before_the_bounds_never_fails_a_tick(instance: DagsterInstance) -> None:
    """REFRESH INTERVAL 99999999999999 DAY, accepted before CREATE checked the bounds."""
    quiet = Looks(instance, Interval(ANCHOR, 99999999999999 * 86400)).at(after(86400))
    assert message(quiet) == (
        "no run is due; the next is task/t's at 9999-12-31 23:59:59.999999+00:00"
    )
