"""EVENT_NOTIFICATION pipes: S3 events from the volume's SQS queue → files to load, no Spark."""

from __future__ import annotations

from dataclasses import dataclass

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.engine import pipe_copy, plan_for, volume_listing
from lake_assets.pipes.entry import PipeEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import in_scope, store_of
from lake_assets.volumes.stores import open_queue
from resources.storage import FileInfo, S3Store


@dataclass(frozen=True)
class Look:
    """One look at a pipe's queue (and, when due, its volume): what a run acts on (see
    LoadPlan.news) and what was seen."""

    pending: list[FileInfo]
    ignored: list[str]
    listing: list[FileInfo] | None


def look(catalog: Catalog, settings: LakeSettings, pipe: PipeEntry, backfill: bool) -> Look:
    """Take the queue's messages, keep the created files not loaded yet (or loaded and changed
    since, for the run to record), then delete them."""
    copy = pipe_copy(pipe)
    volume = catalog.get(VolumeEntry, pipe.volume)
    store = store_of(catalog, settings, volume)
    if not isinstance(store, S3Store):
        raise LakeError(
            f"pipe {pipe.name}: volume {volume.name} is not in object storage",
            f"DROP PIPE {pipe.name} and CREATE it with INGEST_MODE = 'LIST_PURGE'",
        )
    connection = catalog.get(ConnectionEntry, volume.connection)
    queue = open_queue(volume, connection, settings.lake_home)
    received = queue.receive()
    latest: dict[str, FileInfo | None] = {}
    for event in sorted(received.events, key=lambda e: e.time):
        relative = store.relative(event.bucket, event.key)
        if relative is None or not in_scope(copy.source, volume, relative):
            continue
        # A removal drops a created file that is not loaded yet; a later creation brings it back.
        latest[relative] = (
            store.file_info(relative, event.size, event.time, event.etag) if event.created else None
        )
    created = [info for info in latest.values() if info is not None]
    pending = {
        info.relative_path: info
        for info in plan_for(catalog, settings, pipe, created, complete=True).news
    }
    listing = None
    if backfill:
        listing = volume_listing(catalog, settings, pipe)
        for info in plan_for(catalog, settings, pipe, listing).news:
            pending.setdefault(info.relative_path, info)
    queue.delete(received.receipts)
    return Look(
        sorted(pending.values(), key=lambda info: info.relative_path),
        received.ignored,
        listing,
    )
