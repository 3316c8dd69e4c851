"""The S3 event queues the directories sensor reads (those no pipe owns), apart from its defs."""

from __future__ import annotations

from dataclasses import dataclass, field

from dagster import SensorEvaluationContext

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import store_of
from lake_assets.volumes.stores import open_queue
from resources.queues import EventQueue, ObjectEvent
from resources.storage import S3Store


def queue_readers(catalog: Catalog) -> set[str]:
    """The volumes whose event queue an object (an EVENT_NOTIFICATION pipe) reads: it owns that
    queue. Asked of every kind that names volumes, so that volumes need not import pipes."""
    volumes: set[str] = set()
    for kind in CatalogObject.KINDS.values():
        if VolumeEntry.NAMESPACE in kind.REFERENCES.values():
            for entry in catalog.entries(kind):
                volumes.update(entry.event_queues_read())
    return volumes


def owned_queues(catalog: Catalog) -> set[tuple[str, str]]:
    """(connection, queue) of every queue a pipe reads: one reader per queue, as SQS deletes what
    it hands out; volumes sharing such a queue are listed instead."""
    readers = queue_readers(catalog)
    return {
        (volume.connection, volume.queue_name)
        for volume in catalog.entries(VolumeEntry)
        if volume.name in readers and volume.queue_name
    }


@dataclass
class VolumeQueue:
    """One event queue the sensor reads this tick, the volumes whose events it carries, and the
    messages to delete once the tick has decided what they mean."""

    queue: EventQueue
    volumes: list[tuple[VolumeEntry, S3Store]]
    receipts: list[str] = field(default_factory=list)


def _in_volume(volume: VolumeEntry, store: S3Store, event: ObjectEvent) -> bool:
    """Whether an event's object is one the volume's listing holds (as deep as RECURSIVE says)."""
    relative = store.relative(event.bucket, event.key)
    return relative is not None and (volume.recursive or "/" not in relative)


def _volume_queues(
    catalog: Catalog, settings: LakeSettings, volumes: list[VolumeEntry]
) -> dict[tuple[str, str], VolumeQueue]:
    """The queues the sensor reads: those of S3 volumes that no pipe reads, one per queue."""
    owned = owned_queues(catalog)
    queues: dict[tuple[str, str], VolumeQueue] = {}
    for volume in volumes:
        key = (volume.connection, volume.queue_name or "")
        if volume.queue_name is None:
            continue
        if key in owned:
            continue  # one reader per queue (SQS deletes what it hands out): the pipe's; we list
        try:
            store = store_of(catalog, settings, volume)
        except Exception:  # e.g. its connection is gone: listing it says so; the others go on
            continue
        if not isinstance(store, S3Store):
            continue  # a local directory sends no S3 events: it is listed
        if key not in queues:
            connection = catalog.get(ConnectionEntry, volume.connection)
            queues[key] = VolumeQueue(open_queue(volume, connection, settings.lake_home), [])
        queues[key].volumes.append((volume, store))
    return queues


def _take_events(queue: VolumeQueue, listed: dict[str, float]) -> None:
    """Receive the queue's messages; a volume one of them falls in is due for a listing now
    (its time in `listed` goes to 0, which the cursor keeps until a refresh is requested)."""
    received = queue.queue.receive()
    queue.receipts = received.receipts
    for volume, store in queue.volumes:
        if any(_in_volume(volume, store, event) for event in received.events):
            listed[volume.name] = 0.0


def read_queues(
    context: SensorEvaluationContext,
    catalog: Catalog,
    settings: LakeSettings,
    volumes: list[VolumeEntry],
    listed: dict[str, float],
) -> list[VolumeQueue]:
    """Take every queue's messages; `listed` is left holding just the volumes read through a
    queue (a volume whose queue cannot be read is listed every tick, as one without)."""
    times = dict(listed)
    listed.clear()
    read = []
    for queue in _volume_queues(catalog, settings, volumes).values():
        names = {volume.name: times.get(volume.name, 0.0) for volume, _ in queue.volumes}
        try:
            _take_events(queue, names)
        except LakeError as error:
            context.log.warning(f"{error}; listing its volumes every tick meanwhile")
            continue
        listed.update(names)
        read.append(queue)
    return read


def delete_messages(context: SensorEvaluationContext, queues: list[VolumeQueue]) -> None:
    """Delete what the tick received, now that its meaning is in a run request or the cursor; a
    message not deleted comes back and costs one listing more."""
    for queue in queues:
        try:
            queue.queue.delete(queue.receipts)
        except LakeError as error:
            context.log.warning(str(error))
