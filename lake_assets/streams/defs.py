"""Streams → assets partitioned by their source's commit versions, kept in step with the Delta log
and the streams' offsets by one sensor that never starts Spark.

A stream's partition keys are the versions of the source's commits that changed data after the
stream began; a key is materialized once the stream's offset has reached it, so a missing
partition is exactly a version the stream has still to deliver (tasks run on that). A stream
created WITH SHOW_INITIAL_ROWS also has the key of its starting version, missing until its
initial rows are consumed."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from dagster import (
    AddDynamicPartitionsRequest,
    AssetKey,
    AssetMaterialization,
    AssetSpec,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    DeleteDynamicPartitionsRequest,
    DynamicPartitionsDefinition,
    MetadataValue,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import log_versions
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS, minimum_interval
from lake_assets.streams.entry import StreamEntry
from lake_assets.streams.kind import STREAMS_SENSOR
from lake_assets.streams.pending import pending_versions
from lake_assets.volumes.defs import volume_key

STREAMS_GROUP = "streams"
# Delta names commit files by the version in 20 digits (a long has at most 19): keys sort as
# versions do, and a key is the name of the commit file it stands for.
KEY_WIDTH = 20
# Every daemon loop: a stream's new versions are partitions within seconds.
SENSOR_INTERVAL_SECONDS = DAEMON_LOOP_SECONDS


def stream_key(name: str) -> AssetKey:
    return AssetKey(name)


def partitions_name(stream: str) -> str:
    return f"stream_{stream}_versions"


def version_key(version: int) -> str:
    return f"{version:0{KEY_WIDTH}d}"


def source_key(entry: StreamEntry) -> AssetKey:
    """The asset of what the stream reads: a volume's own key, else the relation's name."""
    return volume_key(entry.source) if entry.source_kind == "volume" else AssetKey(entry.source)


def stream_spec(entry: StreamEntry) -> AssetSpec:
    """An external asset: only the sensor reports its partitions, so no run is ever asked for."""
    about = markdown_text(entry.comment or f"changes of {entry.source}")
    return AssetSpec(
        key=stream_key(entry.name),
        deps=[source_key(entry)],
        description=(
            f"{about}. One partition per commit of {entry.source} that changed data, keyed by "
            "its version; a missing partition is a version the stream has not delivered yet. "
            f"No partitions: no commit of {entry.source} is pending, the stream is up to date."
        ),
        group_name=STREAMS_GROUP,
        kinds={"delta"},
        partitions_def=DynamicPartitionsDefinition(name=partitions_name(entry.name)),
        metadata={
            "lake/source": entry.source,
            "lake/source_kind": entry.source_kind,
            "lake/source_location": MetadataValue.path(entry.source_location),
            "lake/mode": entry.mode.value,
            "lake/show_initial_rows": entry.show_initial_rows,
        },
    )


@dataclass(frozen=True)
class Seen:
    """A stream as last brought in step, kept in the cursor so that a quiet tick asks no query."""

    location: str
    generation: int
    offset: int
    initial: bool
    latest: int

    @classmethod
    def of(cls, entry: StreamEntry, latest: int) -> Seen:
        return cls(
            entry.source_location, entry.generation, entry.offset, entry.initial_pending, latest
        )

    def followed_by(self, entry: StreamEntry) -> bool:
        """Whether only consuming writes moved the stream since: then the changes say it all."""
        return (
            self.location == entry.source_location
            and self.generation == entry.generation
            and self.offset <= entry.offset
            and (self.initial or not entry.initial_pending)
        )


def consumed(offset: int, initial_pending: bool, version: int) -> bool:
    """Whether `version` is delivered; the starting version's key waits for the initial rows."""
    return version < offset or (version == offset and not initial_pending)


@dataclass
class Update:
    """One stream's change in a tick; `wipe`: its materializations go first (offset moved back)."""

    add: set[int] = field(default_factory=set)
    delete: set[str] = field(default_factory=set)
    report: set[int] = field(default_factory=set)
    wipe: bool = False
    backlog: int = 0


def data_versions(entry: StreamEntry, after: int, latest: int) -> set[int]:
    """The source's data commits in (after, latest]: those pending were the offset `after`."""
    pending = pending_versions(replace(entry, offset=after)) or []
    return {version for version in pending if version <= latest}


def _parsed(keys: list[str]) -> tuple[dict[int, str], set[str]]:
    """Keys by the version they name, and keys that name none (not the sensor's: deleted)."""
    versions: dict[int, str] = {}
    other: set[str] = set()
    for key in keys:
        if key.isdigit():
            versions[int(key)] = key
        else:
            other.add(key)
    return versions, other


def follow(
    instance: DagsterInstance, entry: StreamEntry, seen: Seen, latest: int
) -> tuple[dict[int, str], Update]:
    """After consuming writes only the new commits and the versions passed since need a look."""
    existing, _ = _parsed(list(instance.get_dynamic_partitions(partitions_name(entry.name))))
    update = Update(add=data_versions(entry, seen.latest, latest) - existing.keys())
    update.report = {
        version
        for version in existing.keys() | update.add
        if consumed(entry.offset, entry.initial_pending, version)
        and not consumed(seen.offset, seen.initial, version)
    }
    return existing, update


def rebuild(
    instance: DagsterInstance, entry: StreamEntry, seen: Seen | None, latest: int
) -> tuple[dict[int, str], Update]:
    """First sight, a hand-set offset or a replaced stream: everything is checked from scratch."""
    existing, other = _parsed(list(instance.get_dynamic_partitions(partitions_name(entry.name))))
    update = Update(delete=other)
    previous: dict[int, str] = {}
    if seen is not None and seen.location != entry.source_location:  # another source's versions
        previous, existing = existing, {}
        update.wipe = True
    start = min(entry.offset, max(existing, default=entry.offset))
    data = data_versions(entry, start, latest)
    pending = {version for version in data if version > entry.offset}
    if entry.initial_pending:
        pending.add(entry.offset)
    kept = {v: key for v, key in existing.items() if v <= entry.offset or v in pending}
    update.delete |= {key for v, key in existing.items() if v not in kept}
    wanted = kept.keys() | data | pending
    done = set() if update.wipe else _materialized(instance, entry.name)
    if done & pending:
        update.wipe, done = True, set()
    # The other source's keys go, but those this one has too stay (their materializations are
    # wiped): Dagster refuses a tick that deletes and adds the same key.
    kept |= {v: key for v, key in previous.items() if v in wanted}
    update.delete |= {key for v, key in previous.items() if v not in wanted}
    update.add = wanted - kept.keys()
    update.report = {v for v in wanted - pending if v not in done}
    return kept, update


def _materialized(instance: DagsterInstance, stream: str) -> set[int]:
    versions, _ = _parsed(list(instance.get_materialized_partitions(stream_key(stream))))
    return set(versions)


def prune(existing: dict[int, str], update: Update, entry: StreamEntry, limit: int) -> None:
    """Dagster slows down past ~100k partitions; the oldest consumed keys go first."""
    keys = existing.keys() | update.add
    done = {v for v in keys if consumed(entry.offset, entry.initial_pending, v)}
    update.backlog = len(keys - done)
    excess = len(keys) - limit
    if excess <= 0:
        return
    dropped = set(sorted(keys, key=lambda v: (v not in done, v))[:excess])
    update.add -= dropped
    update.report -= dropped
    update.delete |= {existing[v] for v in dropped if v in existing}
    update.backlog -= len(dropped - done)


def tick_stream(
    instance: DagsterInstance, entry: StreamEntry, seen: Seen | None, latest: int, limit: int
) -> Update | None:
    """None when nothing moved since `seen`: a quiet tick costs a log listing per stream."""
    if Seen.of(entry, latest) == seen:
        return None
    if seen is not None and seen.followed_by(entry):
        existing, update = follow(instance, entry, seen, latest)
    else:
        existing, update = rebuild(instance, entry, seen, latest)
    prune(existing, update, entry, limit)
    return update


def source_latest(entry: StreamEntry) -> int | str:
    """The source's newest version, or why it cannot be read without Spark (the stream waits)."""
    versions = log_versions(entry.source_location)
    if versions is None:
        return f"the Delta log of {entry.source} is not on a local filesystem"
    return versions[0] if versions else f"{entry.source} has no commits"


def _read_cursor(cursor: str | None) -> dict[str, Seen]:
    try:
        return {name: Seen(**state) for name, state in json.loads(cursor or "{}").items()}
    except (TypeError, ValueError, AttributeError):  # another format: start from the instance
        return {}


@dataclass
class Tick:
    """The sensor's result, gathered stream by stream."""

    requests: list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest] = field(
        default_factory=list
    )
    events: list[AssetMaterialization] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)

    def record(self, entry: StreamEntry, update: Update) -> None:
        name = partitions_name(entry.name)
        self.moved.append(
            f"{entry.name}: {len(update.add)} new, {len(update.report)} delivered, "
            f"{update.backlog} pending"
        )
        if update.add:
            keys = [version_key(v) for v in sorted(update.add)]
            self.requests.append(AddDynamicPartitionsRequest(name, keys))
        if update.delete:
            self.requests.append(DeleteDynamicPartitionsRequest(name, sorted(update.delete)))
        self.events.extend(
            AssetMaterialization(
                asset_key=stream_key(entry.name),
                partition=version_key(version),
                metadata={
                    "lake/offset": MetadataValue.int(entry.offset),
                    "lake/pending_versions": MetadataValue.int(update.backlog),
                },
            )
            for version in sorted(update.report)
        )


def track(
    context: SensorEvaluationContext,
    entry: StreamEntry,
    seen: Seen | None,
    limit: int,
    tick: Tick,
) -> Seen | None:
    """One stream's part of a tick; a stream whose log cannot be read keeps its place."""
    latest = source_latest(entry)
    if isinstance(latest, str):
        context.log.info(f"stream {entry.name} skipped: {latest}")
        return seen
    update = tick_stream(context.instance, entry, seen, latest, limit)
    if update is not None:
        if update.wipe:
            context.instance.wipe_assets([stream_key(entry.name)])
        tick.record(entry, update)
    return Seen.of(entry, latest)


def streams_sensor(settings: LakeSettings) -> SensorDefinition:
    """Catalog and Delta logs only, never Spark: a sensor starts no JVM and answers fast."""

    @sensor(
        name=STREAMS_SENSOR,
        minimum_interval_seconds=minimum_interval(SENSOR_INTERVAL_SECONDS),
        default_status=DefaultSensorStatus.RUNNING,
        description="a partition per source commit of each stream, materialized once consumed",
    )
    def track_streams(context: SensorEvaluationContext) -> SensorResult:
        before = _read_cursor(context.cursor)
        after: dict[str, Seen] = {}
        tick = Tick()
        limit = max(1, settings.stream_partitions)
        # The catalog before the logs: an offset read first is never past the latest version.
        for entry in Catalog(settings.catalog_location).entries(StreamEntry):
            seen = before.get(entry.name)
            try:
                seen = track(context, entry, seen, limit, tick)
            except (OSError, ValueError) as error:  # a source gone must not hide the others
                context.log.warning(f"stream {entry.name} skipped: {error}")
            if seen is not None:
                after[entry.name] = seen
        cursor = json.dumps({name: asdict(seen) for name, seen in after.items()})
        if not (tick.requests or tick.events):
            return SensorResult(skip_reason="no stream moved", cursor=cursor)
        return SensorResult(
            dynamic_partitions_requests=tick.requests,
            asset_events=tick.events,
            cursor=cursor,
            skip_reason="; ".join(tick.moved),  # what moved: no run is this sensor's to request
        )

    return track_streams


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Streams as partitioned external assets; the sensor only when there is a stream to track."""
    streams = catalog.entries(StreamEntry)
    return Definitions(
        assets=[stream_spec(entry) for entry in streams],
        sensors=[streams_sensor(settings)] if streams else [],
    )
