"""A volume a stream reads, whose bucket sends S3 events to an SQS queue (a real moto server over
HTTP): the directories sensor refreshes its directory table from the queue's events, lists it
only when an event falls in it or the backstop is due, and leaves a queue an EVENT_NOTIFICATION
pipe reads to that pipe."""

from __future__ import annotations

import json
import time
from pathlib import Path

from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    SensorResult,
    build_sensor_context,
)

from lake_assets.core.entries import now_utc
from lake_assets.definitions import build_definitions
from lake_assets.pipes.entry import IngestMode, PipeEntry
from lake_assets.session import LakeSession
from lake_assets.volumes.defs import DIRECTORY_BACKSTOP_SECONDS
from lake_assets.volumes.kind import DIRECTORIES_SENSOR
from lake_assets.volumes.queue_events import owned_queues, queue_readers
from tests.ingest_helpers import rows
from tests.pipes import test_event_sensor as events
from tests.pipes.test_event_sensor import Bucket, s3_connection
from tests.volumes import test_defs

# The pipes tests' bucket (its notifications go to a fresh SQS queue) and Dagster instance.
bucket = events.bucket
instance = test_defs.instance

REFRESH_V = "refresh_directory_v_job"


def streamed_volume(
    lake: LakeSession, bucket: Bucket, name: str = "v", where: str = "data/", recursive: bool = True
) -> None:
    """Volume `name` on s3://bucket/`where` notified through the bucket's queue, and a stream on
    it; its directory table is refreshed only by the sensor's runs (no AUTO_REFRESH)."""
    lake.sql(
        f"CREATE EXTERNAL VOLUME {name} LOCATION 's3://{bucket.name}/{where}' USING CONNECTION c "
        f"DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = {str(recursive).upper()} "
        f"NOTIFICATION = (QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '{bucket.queue}');"
        f"CREATE STREAM {name}_files ON VOLUME {name}"
    )


def tick(defs: Definitions, instance: DagsterInstance, cursor: str | None) -> SensorResult:
    sensor = defs.resolve_sensor_def(DIRECTORIES_SENSOR)
    result = sensor(build_sensor_context(instance=instance, definitions=defs, cursor=cursor))
    assert isinstance(result, SensorResult), result
    return result


def requested(result: SensorResult) -> list[str]:
    return [request.job_name for request in result.run_requests]


def backstop_due(result: SensorResult) -> str:
    """The tick's cursor with every volume last listed longer than the backstop ago."""
    listed = json.loads(result.cursor)["listed_at"]
    due = time.time() - DIRECTORY_BACKSTOP_SECONDS - 1
    return json.dumps({"listed_at": dict.fromkeys(listed, due)})


def test_a_volume_with_a_queue_is_refreshed_from_its_events_and_not_listed_without_them(
    lake: LakeSession, bucket: Bucket, instance: DagsterInstance
) -> None:
    s3_connection(lake, bucket.endpoint)
    streamed_volume(lake, bucket)
    defs = build_definitions(lake.settings)

    # The first tick lists (nothing is known yet): the directory is current; the queue's
    # s3:TestEvent is deleted.
    first = tick(defs, instance, None)
    assert first.skip_reason.skip_message == "every directory is current"
    assert json.loads(first.cursor)["listed_at"]["v"] >= time.time() - 60
    assert bucket.messages_waiting() == 0

    bucket.put("data/photos/cat.jpg", b"meow")
    bucket.put("elsewhere/dog.jpg", b"woof")  # outside the volume: no refresh for it
    evented = tick(defs, instance, first.cursor)
    assert requested(evented) == [REFRESH_V]
    assert bucket.messages_waiting() == 0  # drained once the refresh is requested
    job = defs.resolve_job_def(REFRESH_V)
    assert job.execute_in_process(instance=instance).success
    assert rows(lake, "SELECT __change_type, relative_path FROM v_files") == [
        ("INSERT", "photos/cat.jpg")
    ]

    # A file whose event never comes: without events the sensor does not list, so it is not
    # seen — until the backstop listing.
    bucket.put("data/lost.jpg", b"?")
    bucket.lose_events()
    quiet = tick(defs, instance, evented.cursor)
    assert requested(quiet) == []
    assert quiet.skip_reason.skip_message == "every directory is current"
    assert requested(tick(defs, instance, backstop_due(quiet))) == [REFRESH_V]

    # ALTER VOLUME v REFRESH does it at once; the event after it finds the directory current.
    bucket.put("data/bird.jpg", b"tweet")
    lake.sql("ALTER VOLUME v REFRESH")
    after = tick(defs, instance, quiet.cursor)
    assert requested(after) == []
    assert bucket.messages_waiting() == 0
    assert sorted(rows(lake, "SELECT relative_path FROM DIRECTORY(VOLUME v)")) == [
        ("bird.jpg",),
        ("lost.jpg",),
        ("photos/cat.jpg",),
    ]


def test_an_event_that_comes_while_a_refresh_runs_keeps_the_volume_due(
    lake: LakeSession, bucket: Bucket, instance: DagsterInstance
) -> None:
    s3_connection(lake, bucket.endpoint)
    streamed_volume(lake, bucket)
    defs = build_definitions(lake.settings)
    job = defs.resolve_job_def(REFRESH_V)
    running = instance.create_run_for_job(job, status=DagsterRunStatus.STARTED)
    cursor = tick(defs, instance, None).cursor

    bucket.put("data/cat.jpg", b"meow")
    busy = tick(defs, instance, cursor)
    assert busy.skip_reason.skip_message == "v: a refresh is under way"
    assert bucket.messages_waiting() == 0  # the event is kept as the cursor's "due"
    assert json.loads(busy.cursor)["listed_at"] == {"v": 0}

    instance.report_run_canceled(running)  # the run may have listed before the file came
    assert requested(tick(defs, instance, busy.cursor)) == [REFRESH_V]


def test_one_queue_two_volumes_each_refreshed_for_its_own_files(
    lake: LakeSession, bucket: Bucket, instance: DagsterInstance
) -> None:
    s3_connection(lake, bucket.endpoint)
    streamed_volume(lake, bucket)
    streamed_volume(lake, bucket, name="flat", where="flat/", recursive=False)
    defs = build_definitions(lake.settings)
    cursor = tick(defs, instance, None).cursor

    bucket.put("flat/deeper/x.csv", b"1")  # below a volume that is not RECURSIVE
    assert requested(tick(defs, instance, cursor)) == []
    bucket.put("flat/y.csv", b"2")
    assert requested(tick(defs, instance, cursor)) == ["refresh_directory_flat_job"]
    bucket.put("data/z.csv", b"3")
    assert requested(tick(defs, instance, cursor)) == [REFRESH_V]
    assert bucket.messages_waiting() == 0


def test_an_event_notification_pipe_owns_the_queue_and_the_volume_is_listed(
    lake: LakeSession, bucket: Bucket, instance: DagsterInstance
) -> None:
    s3_connection(lake, bucket.endpoint)
    streamed_volume(lake, bucket)
    lake.sql(f"CREATE TABLE t (id BIGINT, name STRING);{events.PIPE}")
    defs = build_definitions(lake.settings)
    first = tick(defs, instance, None)
    assert json.loads(first.cursor)["listed_at"] == {}  # not read through its queue
    waiting = bucket.messages_waiting()
    assert waiting == 1  # the s3:TestEvent, left to the pipe

    bucket.lose_events()
    bucket.put("data/in/a.csv", b"1,a\n")
    assert requested(tick(defs, instance, first.cursor)) == [REFRESH_V]  # found by listing
    assert bucket.messages_waiting() == 1  # the pipe's event, untouched
    assert events.requested_files(events.tick(defs, instance, None)) == ["in/a.csv"]


def test_a_queue_is_owned_by_the_event_notification_pipe_that_reads_its_volume(
    tmp_path: Path, bucket: Bucket
) -> None:
    catalog = events.catalog_only(tmp_path, bucket, bucket.queue).catalog  # volume v, no JVM
    assert queue_readers(catalog) == set()
    for name, mode in (
        ("listing", IngestMode.LIST_PURGE),
        ("notified", IngestMode.EVENT_NOTIFICATION),
    ):
        catalog.add(PipeEntry(name, created_at=now_utc(), volume="v", ingest_mode=mode))
        assert queue_readers(catalog) == ({"v"} if name == "notified" else set())
    assert owned_queues(catalog) == {("c", bucket.queue)}
