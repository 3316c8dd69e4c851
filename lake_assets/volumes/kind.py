"""The volumes kind as registered in lake_assets.kinds: its SQL, handlers and definitions."""

from lake_assets.core.kind import Kind
from lake_assets.core.lifecycle import drop_object
from lake_assets.volumes import engine
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.grammar import (
    SOURCES,
    STATEMENTS,
    WORDS,
    CopyIntoVolume,
    CreateVolume,
    DirectorySource,
    RefreshVolume,
    VolumeSource,
)

# The kind's own Dagster sensors.
VOLUMES_SENSOR = "lake_volumes"
DIRECTORIES_SENSOR = "lake_directories"

KIND = Kind(
    name="volume",
    statements=STATEMENTS,
    handlers={
        CreateVolume: engine.create_volume,
        RefreshVolume: engine.refresh_volume,
        CopyIntoVolume: engine.copy_into_volume,
    },
    sources=SOURCES,
    readers={VolumeSource: engine.read_volume, DirectorySource: engine.read_directory},
    words=WORDS,
    show=engine.show_volumes,
    describe=engine.describe_volume,
    drop=drop_object(VolumeEntry, engine.remove_directory_table),
    defs="lake_assets.volumes.defs",
    sensors=(VOLUMES_SENSOR, DIRECTORIES_SENSOR),
)
