"""S3 event notification messages: which records count, how keys are decoded, what is malformed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from resources.queues import ObjectEvent, object_events


def record(name: str, key: str, size: int = 4, time: str = "2026-11-22T02:46:53.312Z") -> dict:
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventTime": time,
        "eventName": name,
        "s3": {
            "bucket": {"name": "bkt", "arn": "arn:aws:s3:::bkt"},
            "object": {"key": key, "size": size, "eTag": '"e1"'},
        },
    }


def test_created_and_removed_records_with_url_decoded_keys() -> None:
    body = json.dumps(
        {
            "Records": [
                record("ObjectCreated:Put", "in%2Fday+2%2Fa%2Bb.csv"),
                record("ObjectRemoved:Delete", "in/gone.csv", size=0),
                record("ObjectRestore:Completed", "in/cold.csv"),  # not a create or remove
                record("s3:ObjectCreated:CompleteMultipartUpload", "in/big.csv", size=9),
            ]
        }
    )
    at = datetime(2026, 11, 22, 2, 46, 53, 312000, tzinfo=UTC)
    assert object_events(body) == [
        ObjectEvent(True, "bkt", "in/day 2/a+b.csv", 4, "e1", at),
        ObjectEvent(False, "bkt", "in/gone.csv", 0, "e1", at),
        ObjectEvent(True, "bkt", "in/big.csv", 9, "e1", at),
    ]


def test_an_event_time_without_a_zone_is_utc() -> None:
    (event,) = object_events(
        json.dumps({"Records": [record("ObjectCreated:Put", "a.csv", time="2026-11-22T02:46:53")]})
    )
    assert event.time == datetime(2026, 11, 22, 2, 46, 53, tzinfo=UTC)


@pytest.mark.parametrize(
    "body",
    [
        '{"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "bkt"}',
        "not json",
        "[1, 2]",
        '{"Records": [{"eventName": "ObjectCreated:Put"}]}',
        '{"Records": [{"eventName": 3}]}',
    ],
)
def test_bodies_that_are_not_s3_event_notifications(body: str) -> None:
    assert object_events(body) is None
