"""EVENT_NOTIFICATION pipes against a real moto server over HTTP: the bucket sends its S3 event
notifications to an SQS queue; the pipe's sensor reads them (no Spark), and the run it requests
loads just the notified files on real Spark + Delta, keeping the source files."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    SensorResult,
    SkipReason,
    build_sensor_context,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column, now_utc
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.pipes import planning
from lake_assets.session import LakeSession
from lake_assets.sql.grammar import StatementError
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from tests.ingest_helpers import message, properties, rows
from tests.pipes.test_defs import no_spark
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION

EVENTS = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]
PIPE = (
    "CREATE PIPE p INGEST_MODE = 'EVENT_NOTIFICATION' AS "
    "COPY INTO t FROM VOLUME v USING CSV SUBDIRECTORY 'in/'"
)


@dataclass
class Bucket:
    """A bucket whose event notifications go to an SQS queue, both on the moto server."""

    endpoint: str
    name: str
    queue: str
    s3: Any
    sqs: Any

    @property
    def queue_url(self) -> str:
        return self.sqs.get_queue_url(QueueName=self.queue)["QueueUrl"]

    def put(self, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.name, Key=key, Body=body)

    def delete(self, key: str) -> None:
        self.s3.delete_object(Bucket=self.name, Key=key)

    def keys(self) -> list[str]:
        return [item["Key"] for item in self.s3.list_objects_v2(Bucket=self.name)["Contents"]]

    def messages_waiting(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return sum(int(value) for value in attributes.values())

    def lose_events(self) -> None:
        """What a dropped notification looks like to the pipe: the queue never gets it."""
        self.sqs.purge_queue(QueueUrl=self.queue_url)


@pytest.fixture
def bucket(s3_endpoint: str) -> Bucket:
    settings = {
        "endpoint_url": s3_endpoint,
        "aws_access_key_id": ACCESS_ID,
        "aws_secret_access_key": ACCESS_KEY,
        "region_name": REGION,
    }
    s3, sqs = boto3.client("s3", **settings), boto3.client("sqs", **settings)
    name = f"lake-{uuid.uuid4().hex[:12]}"
    queue = f"events-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    s3.put_bucket_notification_configuration(
        Bucket=name,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn["QueueArn"], "Events": EVENTS}]
        },
    )
    return Bucket(s3_endpoint, name, queue, s3, sqs)


def s3_connection(lake: LakeSession, endpoint: str) -> None:
    lake.sql(
        f"CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = '{endpoint}' "
        f"ACCESS_ID = '{ACCESS_ID}' ACCESS_KEY = '{ACCESS_KEY}' REGION = '{REGION}'"
    )


def catalog_only(tmp_path: Path, bucket: Bucket, queue: str | None) -> LakeSession:
    """Connection c, volume v on s3://bucket/data/ notified through `queue`, table t — catalog
    entries only, so no JVM starts: sensors and CREATE PIPE need none."""
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    s3_connection(lake, bucket.endpoint)
    lake.catalog.add(
        VolumeEntry(
            name="v",
            created_at=now_utc(),
            location=f"s3://{bucket.name}/data/",
            connection="c",
            queue_type="AWS_SQS" if queue else None,
            queue_name=queue,
        )
    )
    columns = (Column("id", "BIGINT"), Column("name", "STRING"))
    lake.catalog.add(TableEntry("t", str(settings.warehouse / "t-1"), columns))
    return lake


def tick(defs: Definitions, instance: DagsterInstance, cursor: str | None) -> Any:
    context = build_sensor_context(instance=instance, cursor=cursor)
    return defs.resolve_sensor_def("p")(context)


def listed_at(result: SensorResult) -> float:
    return json.loads(result.cursor)["listed_at"]


def requested_files(result: Any) -> list[str]:
    """The files of the tick's one run request, checking it is a run of t's ingestion."""
    assert isinstance(result, SensorResult), result
    (request,) = result.run_requests
    assert request.run_key.startswith("p-")
    config = request.run_config["ops"]["ingest_t"]["config"]
    assert config["pipe"] == "p"
    return config["files"]


def test_the_sensor_turns_s3_events_into_a_run_for_just_those_files(
    tmp_path: Path, bucket: Bucket, instance: DagsterInstance
) -> None:
    lake = catalog_only(tmp_path, bucket, bucket.queue)
    assert message(lake, PIPE) == (
        f"created pipe p: RUNNING, reads S3 events from queue {bucket.queue} every 5 s and "
        "lists volume v every 60 s for missed ones (with the Dagster daemon running)"
    )
    defs = build_definitions(lake.settings)
    assert defs.resolve_sensor_def("p").job_name == "ingest_t_job"

    # The first tick lists the volume (nothing yet); the queue's s3:TestEvent is deleted.
    before = time.time()
    first = tick(defs, instance, None)
    assert isinstance(first, SensorResult)
    assert first.skip_reason.skip_message == "no new files"
    assert listed_at(first) >= before
    (observed,) = first.asset_events
    assert observed.asset_key == AssetKey(["volume", "v"])
    assert bucket.messages_waiting() == 0

    bucket.put("data/in/a.csv", b"1,a\n")
    bucket.put("data/in/day 2/b+c.csv", b"2,b\n")  # S3 events carry keys URL-encoded
    bucket.put("data/in/_SUCCESS", b"")  # not data
    bucket.put("data/elsewhere.csv", b"3,c\n")  # in the volume, outside the COPY's SUBDIRECTORY
    bucket.put("other/in/x.csv", b"9,z\n")  # outside the volume
    second = tick(defs, instance, first.cursor)
    assert requested_files(second) == ["in/a.csv", "in/day 2/b+c.csv"]
    assert second.cursor == first.cursor  # the listing is not due yet
    assert second.asset_events == []  # no listing, no volume observation
    assert bucket.messages_waiting() == 0  # handled messages are deleted
    idle = tick(defs, instance, second.cursor)
    assert idle.skip_reason.skip_message == "no new files"

    described = properties(lake, "DESC PIPE p")
    assert described["ingest_mode"] == "EVENT_NOTIFICATION"
    assert described["notification_queue"] == f"AWS_SQS:{bucket.queue}"
    assert described["backfill_interval_seconds"] == 60
    (shown,) = rows(lake, "SHOW PIPES")
    assert shown == ("p", "RUNNING", "VOLUME", "v", "t", "EVENT_NOTIFICATION", None)

    lake.sql("ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE")
    bucket.put("data/in/late.csv", b"4,d\n")
    paused = tick(defs, instance, idle.cursor)
    assert isinstance(paused, SkipReason)
    assert "PAUSED" in paused.skip_message
    assert bucket.messages_waiting() == 1  # kept in the queue for after the resume
    lake.sql("ALTER PIPE p SET PIPE_EXECUTION_PAUSED = FALSE")
    assert requested_files(tick(defs, instance, idle.cursor)) == ["in/late.csv"]


def test_object_removed_events_drop_files_not_loaded_yet(
    tmp_path: Path, bucket: Bucket, instance: DagsterInstance
) -> None:
    lake = catalog_only(tmp_path, bucket, bucket.queue)
    lake.sql(PIPE)
    defs = build_definitions(lake.settings)
    cursor = tick(defs, instance, None).cursor

    bucket.put("data/in/gone.csv", b"1,a\n")
    bucket.put("data/in/kept.csv", b"2,b\n")
    bucket.delete("data/in/gone.csv")
    assert requested_files(tick(defs, instance, cursor)) == ["in/kept.csv"]

    bucket.put("data/in/back.csv", b"3,c\n")
    bucket.delete("data/in/back.csv")
    bucket.put("data/in/back.csv", b"4,d\n")  # removed, then created again: it counts
    assert requested_files(tick(defs, instance, cursor)) == ["in/back.csv"]


def test_a_periodic_listing_picks_up_files_whose_event_was_lost(
    tmp_path: Path, bucket: Bucket, instance: DagsterInstance
) -> None:
    lake = catalog_only(tmp_path, bucket, bucket.queue)
    lake.sql(PIPE.replace("AS COPY", "BACKFILL_INTERVAL = 600 AS COPY"))
    defs = build_definitions(lake.settings)
    first = tick(defs, instance, None)
    bucket.put("data/in/lost.csv", b"1,a\n")
    bucket.lose_events()
    missed = tick(defs, instance, first.cursor)
    assert missed.skip_reason.skip_message == "no new files"  # no event, listing not due

    due = json.dumps({"listed_at": time.time() - 601})
    before = time.time()
    listed = tick(defs, instance, due)
    assert requested_files(listed) == ["in/lost.csv"]
    assert listed_at(listed) >= before
    (observed,) = listed.asset_events
    assert {k: v.value for k, v in observed.metadata.items()} == {"files": 1, "bytes": 4}


def test_a_missing_queue_is_one_clear_skip_reason(
    tmp_path: Path, bucket: Bucket, instance: DagsterInstance
) -> None:
    lake = catalog_only(tmp_path, bucket, "no-such-queue")
    lake.sql(PIPE)
    defs = build_definitions(lake.settings)
    for _ in range(2):
        skipped = tick(defs, instance, None)
        assert isinstance(skipped, SkipReason)
        assert skipped.skip_message.startswith(
            "SQS queue no-such-queue of volume v does not exist — create the queue"
        )


def test_messages_that_are_not_s3_object_events_are_deleted_and_ignored(
    tmp_path: Path, bucket: Bucket, instance: DagsterInstance
) -> None:
    lake = catalog_only(tmp_path, bucket, bucket.queue)
    lake.sql(PIPE)
    defs = build_definitions(lake.settings)
    cursor = tick(defs, instance, None).cursor
    for body in ("not json", '{"Records": "nope"}', '{"Records": [{"eventName": 3}]}'):
        bucket.sqs.send_message(QueueUrl=bucket.queue_url, MessageBody=body)
    bucket.put("data/in/a.csv", b"1,a\n")
    assert requested_files(tick(defs, instance, cursor)) == ["in/a.csv"]
    assert bucket.messages_waiting() == 0


def test_create_pipe_refuses_what_event_notification_cannot_do(
    tmp_path: Path, bucket: Bucket
) -> None:
    lake = catalog_only(tmp_path, bucket, None)
    (tmp_path / "files").mkdir()
    lake.sql("CREATE STORAGE CONNECTION files TYPE LOCAL")
    for name, location, queue_type in (
        ("local_v", f"{(tmp_path / 'files').as_uri()}/", "AWS_SQS"),
        ("mns_v", f"s3://{bucket.name}/mns/", "ALICLOUD_MNS"),
    ):
        lake.catalog.add(
            VolumeEntry(
                name=name,
                created_at=now_utc(),
                location=location,
                connection="files" if location.startswith("file:") else "c",
                queue_type=queue_type,
                queue_name="q",
            )
        )
    mode = "INGEST_MODE = 'EVENT_NOTIFICATION'"
    refusals = {
        "v": "pipe p: INGEST_MODE = 'EVENT_NOTIFICATION' needs a queue, but volume v has no "
        "NOTIFICATION — DROP VOLUME v and CREATE it again with NOTIFICATION = "
        "(QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '…'), the SQS queue the bucket's event "
        "notifications go to",
        "local_v": "pipe p: INGEST_MODE = 'EVENT_NOTIFICATION' needs object storage events, but "
        f"volume local_v is a local directory ({(tmp_path / 'files').as_uri()}/) — use "
        "INGEST_MODE = 'LIST_PURGE' for local volumes",
        "mns_v": "pipe p: INGEST_MODE = 'EVENT_NOTIFICATION': volume mns_v's QUEUE_TYPE "
        "'ALICLOUD_MNS' is not supported — send the bucket's event notifications to an SQS "
        "queue (any S3-compatible endpoint's SQS API) and use QUEUE_TYPE = 'AWS_SQS'",
    }
    for volume, expected in refusals.items():
        with pytest.raises(StatementError) as caught:
            lake.sql(f"CREATE PIPE p {mode} AS COPY INTO t FROM VOLUME {volume} USING CSV")
        assert str(caught.value) == expected
    with pytest.raises(StatementError) as caught:
        lake.sql(f"CREATE PIPE p {mode} AS COPY INTO t FROM VOLUME mns_v USING CSV PURGE = TRUE")
    assert str(caught.value) == (
        "pipe p: INGEST_MODE = 'EVENT_NOTIFICATION' keeps the source files, so PURGE = TRUE "
        "cannot apply — drop PURGE = TRUE, or use INGEST_MODE = 'LIST_PURGE' to delete loaded "
        "files"
    )
    with pytest.raises(StatementError, match="BACKFILL_INTERVAL applies to INGEST_MODE"):
        lake.sql("CREATE PIPE p BACKFILL_INTERVAL = 5 AS COPY INTO t FROM VOLUME v USING CSV")
    with pytest.raises(StatementError, match="BACKFILL_INTERVAL 0 is not a whole number"):
        lake.sql(
            f"CREATE PIPE p {mode} BACKFILL_INTERVAL = 0 AS COPY INTO t FROM VOLUME v USING CSV"
        )
    assert rows(lake, "SHOW PIPES") == []


def test_the_requested_run_loads_the_notified_files_once_and_keeps_them(
    lake: LakeSession,
    s3_endpoint: str,
    bucket: Bucket,
    instance: DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # S3 dates objects at upload: the listing's settle window cannot be dodged by back-dating.
    monkeypatch.setattr(planning, "SETTLE_SECONDS", 0.0)
    s3_connection(lake, s3_endpoint)
    lake.sql(
        f"CREATE EXTERNAL VOLUME v LOCATION 's3://{bucket.name}/data/' USING CONNECTION c "
        f"NOTIFICATION = (QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '{bucket.queue}');"
        "CREATE TABLE t (id BIGINT, name STRING);"
        f"{PIPE}"
    )
    defs = build_definitions(lake.settings)
    job = defs.resolve_job_def("ingest_t_job")
    cursor = tick(defs, instance, None).cursor
    bucket.put("data/in/a.csv", b"1,a\n2,b\n")
    bucket.put("data/in/day 2/b.csv", b"3,c\n")
    bucket.put("data/in/unnotified.csv", b"4,d\n")
    bucket.sqs.purge_queue(QueueUrl=bucket.queue_url)  # this one's event was lost…
    bucket.put("data/in/a.csv", b"1,a\n2,b\n")  # …and these two are announced (again)
    bucket.put("data/in/day 2/b.csv", b"3,c\n")
    bucket.put("data/in/soon-gone.csv", b"5,e\n")
    request = tick(defs, instance, cursor)
    assert requested_files(request) == ["in/a.csv", "in/day 2/b.csv", "in/soon-gone.csv"]
    bucket.delete("data/in/soon-gone.csv")  # removed before the run: nothing to load
    (run_request,) = request.run_requests

    result = job.execute_in_process(instance=instance, run_config=run_request.run_config)
    assert result.success
    (event,) = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert (metadata["rows_loaded"], metadata["files_loaded"], metadata["files_purged"]) == (
        3,
        2,
        0,
    )
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    history = rows(
        lake, "SELECT file_path, status, rows_loaded, pipe_name FROM load_history('t') ORDER BY 1"
    )
    assert history == [
        (f"s3://{bucket.name}/data/in/a.csv", "LOADED", 2, "p"),
        (f"s3://{bucket.name}/data/in/day 2/b.csv", "LOADED", 1, "p"),
    ]
    assert bucket.keys() == ["data/in/a.csv", "data/in/day 2/b.csv", "data/in/unnotified.csv"]

    # The same run again: nothing loads twice. A file uploaded again is a new version (S3 dates
    # each upload): its run records that it changed since it was loaded, and loads nothing.
    assert job.execute_in_process(instance=instance, run_config=run_request.run_config).success
    bucket.put("data/in/a.csv", b"1,a\n2,b\n")
    again = tick(defs, instance, cursor)
    assert requested_files(again) == ["in/a.csv"]
    (again_request,) = again.run_requests
    assert job.execute_in_process(instance=instance, run_config=again_request.run_config).success
    # A run started by hand (UI Materialize) has no files named: it lists the volume.
    assert job.execute_in_process(instance=instance).success
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,), (4,)]
    assert rows(lake, "SELECT file_path, status FROM load_history('t') ORDER BY 1, 2") == [
        (f"s3://{bucket.name}/data/in/a.csv", "LOADED"),
        (f"s3://{bucket.name}/data/in/a.csv", "SKIPPED_CHANGED"),
        (f"s3://{bucket.name}/data/in/day 2/b.csv", "LOADED"),
        (f"s3://{bucket.name}/data/in/unnotified.csv", "LOADED"),
    ]
    assert len(bucket.keys()) == 3
    assert message(lake, "ALTER PIPE p REFRESH").startswith("COPY: 0 files loaded")
