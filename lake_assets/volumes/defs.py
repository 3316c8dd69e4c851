"""Volumes → assets whose data version is a digest of the file listing."""

from __future__ import annotations

import hashlib

from dagster import AssetKey, AssetSpec, Definitions

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.volumes.entry import VolumeEntry
from resources.storage import FileInfo

VOLUMES_GROUP = "volumes"


def volume_key(name: str) -> AssetKey:
    return AssetKey(["volume", name])


def listing_digest(files: list[FileInfo]) -> str:
    """Changes whenever a file appears, disappears or changes."""
    digest = hashlib.sha256()
    for info in files:
        digest.update(f"{info.relative_path}\\0{info.etag}\\0{info.size}\\n".encode())
    return digest.hexdigest()[:16]


def listing_metadata(files: list[FileInfo]) -> dict[str, int]:
    return {"files": len(files), "bytes": sum(info.size for info in files)}


def volume_spec(volume: VolumeEntry) -> AssetSpec:
    """A volume is an external asset; its pipe's sensor reports observations with the listing's
    digest as data version and the file count and bytes as metadata."""
    return AssetSpec(
        key=volume_key(volume.name),
        group_name=VOLUMES_GROUP,
        description=volume.comment or f"files under {volume.location}",
        kinds={
            "s3" if "://" in volume.location and not volume.location.startswith("file:") else "file"
        },
        metadata={"location": volume.location, "connection": volume.connection},
    )


def build_defs(catalog: Catalog, settings: LakeSettings) -> Definitions:
    return Definitions(assets=[volume_spec(volume) for volume in catalog.entries(VolumeEntry)])
