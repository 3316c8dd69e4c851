"""SHOW, DESC and DROP for connections, volumes and pipes: catalog work, no Spark."""

from __future__ import annotations

import shutil

from lake_assets.engine import pipes, volumes
from lake_assets.engine.results import Result
from lake_assets.sql.statements import DescribeObject, DropObject, ShowObjects
from resources.catalog import Catalog
from resources.entries import CatalogObject, ConnectionEntry, PipeEntry, VolumeEntry
from resources.errors import LakeError
from resources.settings import LakeSettings

KINDS: dict[str, type[CatalogObject]] = {
    "connection": ConnectionEntry,
    "volume": VolumeEntry,
    "pipe": PipeEntry,
}


def manage(
    catalog: Catalog, settings: LakeSettings, stmt: ShowObjects | DescribeObject | DropObject
) -> Result:
    kind = KINDS[stmt.kind]
    if isinstance(stmt, ShowObjects):
        return _show(catalog, stmt.kind)
    if isinstance(stmt, DescribeObject):
        entry = catalog.get_object(kind, stmt.name)
        if isinstance(entry, PipeEntry):
            return pipes.describe_pipe(catalog, settings, entry)
        if isinstance(entry, VolumeEntry):
            store = volumes.store_of(catalog, settings, entry)
            users = [p for p in catalog.objects(PipeEntry) if p.volume == entry.name]
            return volumes.describe_volume(entry, store, users)
        return volumes.describe_connection(entry)
    return _drop(catalog, kind, stmt)


def _show(catalog: Catalog, kind: str) -> Result:
    if kind == "pipe":
        return pipes.show_pipes(catalog)
    if kind == "volume":
        return Result(
            ["name", "location", "connection", "auto_refresh", "comment", "created_at"],
            [
                (v.name, v.location, v.connection, v.auto_refresh, v.comment, v.created_at)
                for v in catalog.objects(VolumeEntry)
            ],
        )
    return Result(
        ["name", "type", "endpoint", "created_at"],
        [(c.name, c.type, c.endpoint, c.created_at) for c in catalog.objects(ConnectionEntry)],
    )


def _drop(catalog: Catalog, kind: type[CatalogObject], stmt: DropObject) -> Result:
    users: list[str] = []
    if kind is VolumeEntry:
        users = [f"pipe {p.name}" for p in catalog.objects(PipeEntry) if p.volume == stmt.name]
    elif kind is ConnectionEntry:
        users = [
            f"volume {v.name}" for v in catalog.objects(VolumeEntry) if v.connection == stmt.name
        ]
    if users:
        raise LakeError(f"{kind.LABEL} {stmt.name} is used by {users[0]}", f"drop {users[0]} first")
    if catalog.find_object(kind, stmt.name) is None and stmt.if_exists:
        return Result.status(f"{kind.LABEL} {stmt.name} does not exist; nothing to do")
    entry = catalog.get_object(kind, stmt.name)  # an unknown name is an error here
    catalog.remove_object(kind, stmt.name)
    if isinstance(entry, VolumeEntry):
        shutil.rmtree(entry.directory_location, ignore_errors=True)
    return Result.status(f"dropped {kind.LABEL} {stmt.name}")
