"""Volumes → observable assets whose data version is a digest of the file listing, and the sensor
that observes every volume by listing it (never Spark)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

from dagster import (
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DagsterInstance,
    DataVersion,
    DefaultSensorStatus,
    Definitions,
    ObserveResult,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    multi_observable_source_asset,
    sensor,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.names import VOLUMES_SENSOR
from lake_assets.core.settings import LakeSettings
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import listing_digest, store_of
from resources.storage import FileInfo

VOLUMES_GROUP = "volumes"
# A listing is cheap, but each one of an S3 volume is a request: every volume twice a minute.
OBSERVE_INTERVAL_SECONDS = 30
DATA_VERSION_TAG = "dagster/data_version"


def volume_key(name: str) -> AssetKey:
    return AssetKey(["volume", name])


def listing_metadata(files: list[FileInfo]) -> dict[str, int]:
    return {"files": len(files), "bytes": sum(info.size for info in files)}


def volume_files(catalog: Catalog, settings: LakeSettings, volume: VolumeEntry) -> list[FileInfo]:
    """The files a volume holds, as deep as its RECURSIVE says: what every observation digests."""
    return store_of(catalog, settings, volume).list(recursive=volume.recursive)


def volume_observation(volume: VolumeEntry, listing: list[FileInfo]) -> AssetObservation:
    """The one way a volume is observed; a deeper listing (a pipe's FILES) is cut to the volume's
    own depth, so that every observer reports the same data version for the same files."""
    own = [info for info in listing if volume.recursive or "/" not in info.relative_path]
    return AssetObservation(
        asset_key=volume_key(volume.name),
        metadata=listing_metadata(own),
        tags={DATA_VERSION_TAG: listing_digest(own)},
    )


def read_under_way(instance: DagsterInstance, readers: Iterable[AssetKey]) -> bool:
    """Whether a run that materializes an asset reading the volume has not finished. That run
    observes the volume once it has loaded (and purged) files; a sensor's listing from before the
    purge could be recorded after it, and the table would look stale with nothing left to load."""
    for key in readers:
        planned = instance.get_latest_planned_materialization_info(key)
        run = instance.get_run_by_id(planned.run_id) if planned is not None else None
        if run is not None and not run.is_finished:
            return True
    return False


def volume_spec(volume: VolumeEntry) -> AssetSpec:
    """What the UI shows of a volume: where its files are, and through which connection."""
    return AssetSpec(
        key=volume_key(volume.name),
        group_name=VOLUMES_GROUP,
        description=volume.comment or f"files under {volume.location}",
        kinds={
            "s3" if "://" in volume.location and not volume.location.startswith("file:") else "file"
        },
        metadata={"location": volume.location, "connection": volume.connection},
    )


def volume_asset(volume: VolumeEntry, settings: LakeSettings) -> AssetsDefinition:
    """An observable external asset: Dagster compares its observed data version with the one a
    table's materialization read, so a table is stale only when its volume changed since."""
    # Observable assets are beta in Dagster 1.13; the warning would repeat in every run's log.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)

        @multi_observable_source_asset(
            name=f"observe_volume_{volume.name}", specs=[volume_spec(volume)]
        )
        def observe() -> ObserveResult:
            catalog = Catalog(settings.catalog_path)
            current = catalog.get(VolumeEntry, volume.name)
            observed = volume_observation(current, volume_files(catalog, settings, current))
            return ObserveResult(
                asset_key=observed.asset_key,
                data_version=DataVersion(observed.tags[DATA_VERSION_TAG]),
                metadata=observed.metadata,
            )

    return observe


def volumes_sensor(names: list[str], settings: LakeSettings) -> SensorDefinition:
    """Observes every volume: a listing each, no run and no Spark; a volume that a run is loading
    from is left to that run."""

    @sensor(
        name=VOLUMES_SENSOR,
        minimum_interval_seconds=OBSERVE_INTERVAL_SECONDS,
        default_status=DefaultSensorStatus.RUNNING,
        description="observes every volume: its listing's digest is its data version",
    )
    def observe_volumes(context: SensorEvaluationContext) -> SensorResult | SkipReason:
        catalog = Catalog(settings.catalog_path)
        graph = context.repository_def.asset_graph
        observations = []
        for name in names:
            volume = catalog.find(VolumeEntry, name)
            readers = graph.get(volume_key(name)).child_keys
            if volume is None or read_under_way(context.instance, readers):
                continue
            try:
                observations.append(
                    volume_observation(volume, volume_files(catalog, settings, volume))
                )
            except Exception as error:  # one unreachable volume must not hide the others
                context.log.warning(f"volume {name} could not be listed: {error}")
        if not observations:
            return SkipReason("no volume to observe now")
        return SensorResult(asset_events=observations)

    return observe_volumes


def build_defs(catalog: Catalog, settings: LakeSettings) -> Definitions:
    """Each volume as an observable asset, and the sensor that observes them all."""
    volumes = catalog.entries(VolumeEntry)
    return Definitions(
        assets=[volume_asset(volume, settings) for volume in volumes],
        sensors=[volumes_sensor([volume.name for volume in volumes], settings)] if volumes else [],
    )
