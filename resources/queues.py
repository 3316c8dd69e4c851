"""S3 event notifications read from an SQS queue: object created/removed, by bucket and key."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

from botocore.exceptions import BotoCoreError, ClientError

from lake_assets.core.errors import LakeError

# SQS hands out at most 10 messages per call; a tick takes at most this many.
MAX_MESSAGES_PER_TICK = 1000
_MISSING_QUEUE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


@dataclass(frozen=True)
class ObjectEvent:
    """One S3 record: an object created (with its size and ETag) or removed."""

    created: bool
    bucket: str
    key: str
    size: int
    etag: str
    time: datetime


@dataclass
class Received:
    """What one look at the queue found; `receipts` delete every message, events and not."""

    events: list[ObjectEvent] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    receipts: list[str] = field(default_factory=list)


def object_events(body: str) -> list[ObjectEvent] | None:
    """The records of an S3 event notification; None when the body is not one (s3:TestEvent…)."""
    try:
        message = json.loads(body)
        records = message["Records"]
        events = []
        for record in records:
            name = record["eventName"].removeprefix("s3:")
            if not name.startswith(("ObjectCreated:", "ObjectRemoved:")):
                continue
            item = record["s3"]["object"]
            events.append(
                ObjectEvent(
                    created=name.startswith("ObjectCreated:"),
                    bucket=record["s3"]["bucket"]["name"],
                    key=unquote_plus(item["key"]),
                    size=int(item.get("size", 0)),
                    etag=str(item.get("eTag", "")).strip('"'),
                    time=_event_time(record.get("eventTime")),
                )
            )
        return events
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _event_time(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _described(body: str) -> str:
    """A malformed message, in a few words for the log (an S3 test event names itself)."""
    try:
        event = json.loads(body).get("Event")
    except (ValueError, AttributeError):
        event = None
    return str(event) if event else f"not S3 event JSON: {body[:60]!r}"


class EventQueue:
    """An SQS queue that a bucket's event notifications are sent to."""

    def __init__(self, client: Any, name: str, volume: str) -> None:
        self.client = client
        self.name = name
        self.volume = volume
        self._url: str | None = None

    def _failure(self, error: ClientError | BotoCoreError) -> LakeError:
        if isinstance(error, ClientError) and error.response["Error"].get("Code") in _MISSING_QUEUE:
            return LakeError(
                f"SQS queue {self.name} of volume {self.volume} does not exist",
                "create the queue and point the bucket's event notifications at it, or DROP "
                "VOLUME and CREATE it again with the right NOTIFICATION = (QUEUE_NAME = '…')",
            )
        detail = (
            error.response["Error"].get("Message") if isinstance(error, ClientError) else str(error)
        )
        return LakeError(
            f"cannot read SQS queue {self.name} of volume {self.volume}: {detail}",
            "check the connection's endpoint and that its credentials may receive and delete "
            "messages of the queue",
        )

    def url(self) -> str:
        if self._url is None:
            try:
                self._url = self.client.get_queue_url(QueueName=self.name)["QueueUrl"]
            except (ClientError, BotoCoreError) as error:
                raise self._failure(error) from None
        return self._url

    def receive(self, limit: int = MAX_MESSAGES_PER_TICK) -> Received:
        """Every message waiting now (up to `limit`), without waiting for more to arrive."""
        found = Received()
        while len(found.receipts) < limit:
            try:
                reply = self.client.receive_message(
                    QueueUrl=self.url(),
                    MaxNumberOfMessages=min(10, limit - len(found.receipts)),
                    WaitTimeSeconds=0,
                )
            except (ClientError, BotoCoreError) as error:
                raise self._failure(error) from None
            messages = reply.get("Messages", [])
            if not messages:
                break
            for message in messages:
                found.receipts.append(message["ReceiptHandle"])
                events = object_events(message.get("Body", ""))
                if events is None:
                    found.ignored.append(_described(message.get("Body", "")))
                else:
                    found.events.extend(events)
        return found

    def delete(self, receipts: list[str]) -> None:
        """Remove handled messages; SQS deletes at most 10 per call."""
        for start in range(0, len(receipts), 10):
            entries = [
                {"Id": str(number), "ReceiptHandle": handle}
                for number, handle in enumerate(receipts[start : start + 10])
            ]
            try:
                self.client.delete_message_batch(QueueUrl=self.url(), Entries=entries)
            except (ClientError, BotoCoreError) as error:
                raise self._failure(error) from None
