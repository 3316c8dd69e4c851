"""Volumes → observable assets whose data version is a digest of the file listing, the sensor
that observes every volume by listing it (never Spark), and for a volume a stream reads, a job
that refreshes its directory table and a sensor that runs it when the listing changed.

That sensor learns of changes from the volume's S3 event queue when it has one (listing only when
an event falls in the volume, and every DIRECTORY_BACKSTOP_SECONDS for lost events), and by
listing every tick otherwise. A queue has one reader, since SQS deletes what a reader takes: when
an EVENT_NOTIFICATION pipe reads a volume, the pipe owns its queue and the sensor lists the
volume every tick instead. Pipes are found by kind in the catalog, not imported: data flows
volume → pipe.

No `from __future__ import annotations` here: Dagster reads the op's context type at runtime."""

import json
import time
import warnings
from collections.abc import Iterable

from dagster import (
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DagsterInstance,
    DagsterRunStatus,
    DataVersion,
    DefaultSensorStatus,
    Definitions,
    JobDefinition,
    ObserveResult,
    OpExecutionContext,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    job,
    multi_observable_source_asset,
    op,
    sensor,
)

from lake_assets.automation import DATA_VERSION_TAG
from lake_assets.core.catalog import Catalog
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS, minimum_interval
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import directory_digest, listing_digest, refresh_directory, store_of
from lake_assets.volumes.kind import DIRECTORIES_SENSOR, VOLUMES_SENSOR
from lake_assets.volumes.queue_events import delete_messages, read_queues
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource
from resources.storage import FileInfo

VOLUMES_GROUP = "volumes"
# A listing is cheap, but each one of an S3 volume is a request: every volume twice a minute.
OBSERVE_INTERVAL_SECONDS = 30
# A directory table a stream reads follows its volume within seconds: every daemon loop.
DIRECTORY_INTERVAL_SECONDS = DAEMON_LOOP_SECONDS
# A failed directory refresh is asked for again this long after it ended.
DIRECTORY_RETRY_SECONDS = 30
# A volume whose S3 events the sensor reads is listed only when one falls in it, and also this
# often: S3 notifications are best effort (a lost or misconfigured delivery, a sensor that died
# between deleting messages and storing its tick), and one listing per volume every 5 minutes
# bounds how long the directory table can miss a change, at 1/150 of the listings of every tick.
DIRECTORY_BACKSTOP_SECONDS = 300
_UNDER_WAY = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


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
        description=markdown_text(volume.comment or f"files under {volume.location}"),
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
            catalog = Catalog(settings.catalog_location)
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
        minimum_interval_seconds=minimum_interval(OBSERVE_INTERVAL_SECONDS),
        default_status=DefaultSensorStatus.RUNNING,
        description="observes every volume: its listing's digest is its data version",
    )
    def observe_volumes(context: SensorEvaluationContext) -> SensorResult | SkipReason:
        catalog = Catalog(settings.catalog_location)
        repository = context.repository_def
        assert repository is not None, "a sensor is evaluated in its code location"
        graph = repository.asset_graph
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
        observed = ", ".join(str(event.asset_key.path[-1]) for event in observations)
        return SensorResult(skip_reason=f"observed {observed}", asset_events=observations)

    return observe_volumes


def directory_job(volume: VolumeEntry) -> JobDefinition:
    """Refreshes the volume's directory table (one MERGE, with Spark); one run at a time."""

    @op(name=f"refresh_directory_{volume.name}", pool=f"directory_{volume.name}")
    def refresh(
        context: OpExecutionContext, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> None:
        lake = catalog.catalog
        current = lake.get(VolumeEntry, volume.name)
        store = store_of(lake, catalog.settings, current)
        context.log.info(refresh_directory(spark.spark_session, current, store))

    @job(name=directory_job_name(volume), description=f"refresh {volume.name}'s directory table")
    def refresh_job() -> None:
        refresh()

    return refresh_job


def _directory_request(instance: DagsterInstance, job_name: str, digest: str) -> RunRequest | str:
    """A run of the job that refreshes to `digest`, or why none is asked for now: one is under
    way, or the last one failed moments ago."""
    if instance.get_runs(RunsFilter(job_name=job_name, statuses=_UNDER_WAY), limit=1):
        return "a refresh is under way"
    last = instance.get_run_records(RunsFilter(job_name=job_name), limit=1)
    failed = last and last[0].dagster_run.status == DagsterRunStatus.FAILURE
    if failed and time.time() - (last[0].end_time or 0) < DIRECTORY_RETRY_SECONDS:
        return "the last refresh failed; retrying soon"
    return RunRequest(job_name=job_name, tags={"lake/directory_digest": digest})


def _refresh_request(
    instance: DagsterInstance, catalog: Catalog, settings: LakeSettings, volume: VolumeEntry
) -> RunRequest | str | None:
    """List the volume and compare the digest with its directory table's (Delta log, no Spark):
    None when they agree, else a refresh run or why none is asked for now."""
    digest = listing_digest(volume_files(catalog, settings, volume))
    if digest == directory_digest(None, volume):
        return None
    return _directory_request(instance, directory_job_name(volume), digest)


def _listed_at(cursor: str | None) -> dict[str, float]:
    """When each volume read through its queue was last listed (0: an event came since)."""
    return dict(json.loads(cursor or "{}").get("listed_at", {}))


def directories_sensor(
    volumes: list[VolumeEntry], jobs: list[JobDefinition], settings: LakeSettings
) -> SensorDefinition:
    """Lists each volume a stream reads — every tick, or for a volume whose queue it reads, when
    an event falls in it or the backstop is due — and compares the listing's digest with the one
    its directory table's last refresh committed (from the Delta log): no Spark decides.

    The cursor keeps, per volume read through its queue, when it was last listed:
    `{"listed_at": {"<volume>": <epoch seconds>}}`; 0 means an event came and no refresh has been
    requested since. A message is deleted only after the tick that received it has requested a
    refresh after it, or found the directory current, or kept the volume due in that cursor."""

    @sensor(
        name=DIRECTORIES_SENSOR,
        jobs=jobs,
        minimum_interval_seconds=minimum_interval(DIRECTORY_INTERVAL_SECONDS),
        default_status=DefaultSensorStatus.RUNNING,
        description="refreshes the directory table of every volume a stream reads",
    )
    def watch_directories(context: SensorEvaluationContext) -> SensorResult:
        catalog = Catalog(settings.catalog_location)
        found = [catalog.find(VolumeEntry, volume.name) for volume in volumes]
        current = [volume for volume in found if volume is not None]
        listed = _listed_at(context.cursor)
        queues = read_queues(context, catalog, settings, current, listed)
        requests, waiting = [], []
        now = time.time()
        for volume in current:
            if volume.name in listed and now - listed[volume.name] < DIRECTORY_BACKSTOP_SECONDS:
                continue  # no event fell in it and the backstop listing is not due
            try:
                request = _refresh_request(context.instance, catalog, settings, volume)
            except Exception as error:  # one unreachable volume must not hide the others
                context.log.warning(f"volume {volume.name} could not be listed: {error}")
                continue
            if isinstance(request, str):
                waiting.append(f"{volume.name}: {request}")
                continue  # still due: listed again next tick
            if request is not None:
                requests.append(request)
            if volume.name in listed:
                listed[volume.name] = now
        delete_messages(context, queues)
        return SensorResult(
            run_requests=requests,
            skip_reason=None if requests else "; ".join(waiting) or "every directory is current",
            cursor=json.dumps({"listed_at": listed}, sort_keys=True),
        )

    return watch_directories


def directory_job_name(volume: VolumeEntry) -> str:
    return f"refresh_directory_{volume.name}_job"


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Each volume as an observable asset and the sensor that observes them all; for volumes a
    stream reads, the jobs that refresh their directory tables and the sensor that runs them."""
    volumes = catalog.entries(VolumeEntry)
    tracked = [volume for volume in volumes if volume.change_tracking]
    jobs = [directory_job(volume) for volume in tracked]
    sensors = [volumes_sensor([volume.name for volume in volumes], settings)] if volumes else []
    if tracked:
        sensors.append(directories_sensor(tracked, jobs, settings))
    return Definitions(
        assets=[volume_asset(volume, settings) for volume in volumes],
        jobs=jobs,
        sensors=sensors,
    )
