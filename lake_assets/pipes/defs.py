"""Pipes → a sensor per pipe that requests runs of its target table's ingestion asset.

No `from __future__ import annotations` here: Dagster reads the op's config class at runtime."""

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetIn,
    AssetKey,
    AssetOut,
    AssetsDefinition,
    Config,
    DataVersion,
    Definitions,
    In,
    MaterializeResult,
    MetadataValue,
    Nothing,
    OpDefinition,
    OpExecutionContext,
    Out,
    config_mapping,
    define_asset_job,
    graph_multi_asset,
    op,
)

from lake_assets.automation import LOAD_RUN_TAG, load_run_selection, refreshed_in_load_run
from lake_assets.changes import schema_metadata
from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.checks import (
    Loads,
    failure_text,
    load_check_results,
    load_checks,
    with_status,
)
from lake_assets.pipes.engine import ingest, pipe_copy
from lake_assets.pipes.entry import IngestMode, PipeEntry, PipeKind
from lake_assets.pipes.kafka.batches import BatchOutcome, run_batch
from lake_assets.pipes.kafka.sensor import kafka_pipe_sensor
from lake_assets.pipes.kafka.topics import topic_key, topic_spec
from lake_assets.pipes.load_records import LoadStatus
from lake_assets.pipes.planning import CHANGED_SINCE_LOADED
from lake_assets.pipes.sensors import event_pipe_sensor, pipe_sensor
from lake_assets.tables.checks import counts_metadata
from lake_assets.tables.defs import TABLES_GROUP, table_metadata
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.defs import volume_files, volume_key, volume_observation
from lake_assets.volumes.entry import VolumeEntry
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

OBJECT_TAG = "lake/object"


class IngestConfig(Config):
    """Set by EVENT_NOTIFICATION sensors; a manual run leaves it empty and lists the volumes."""

    pipe: str | None = None  # load only this pipe (default: every running pipe of the table)
    files: list[str] | None = None  # the pipe's volume paths to load (default: list the volume)


def _load_config(table: str) -> Any:
    """The run config stays `ops.ingest_<table>.config`; it is the load step's."""

    @config_mapping
    def mapping(config: IngestConfig) -> dict[str, Any]:
        return {_load_name(table): {"config": config.model_dump()}}

    return mapping


def _load_name(table: str) -> str:
    """Ops are named per table: Dagster's job of all assets refuses two ops of one name."""
    return f"load_{table}"


def _volume_input(volume: str) -> str:
    return f"volume_{volume}"


def _topic_input(topic: str) -> str:
    return f"topic_{''.join(c if c.isalnum() else '_' for c in topic)}"


def _upstream(pipes: list[PipeEntry]) -> dict[str, AssetKey]:
    """What a table's pipes read, by the ingestion graph's input names: volumes and topics."""
    return {
        (_topic_input(p.topic) if p.pipe_kind is PipeKind.KAFKA else _volume_input(p.volume)): (
            topic_key(p.topic) if p.pipe_kind is PipeKind.KAFKA else volume_key(p.volume)
        )
        for p in pipes
    }


def _volume_pipes(pipes: list[PipeEntry]) -> list[PipeEntry]:
    return [pipe for pipe in pipes if pipe.pipe_kind is PipeKind.VOLUME]


def load_op(table: TableEntry, pipes: list[PipeEntry], sessions: Sessions) -> OpDefinition:
    """Loads the running pipes' pending files and batches (a commit per pipe), then observes
    the volumes."""
    ins = dict.fromkeys(_upstream(pipes), In(Nothing))

    @op(name=_load_name(table.name), ins=ins)
    def load(
        context: OpExecutionContext,
        config: IngestConfig,
        spark: DeltaSparkResource,
        catalog: CatalogResource,
    ) -> Loads:
        lake = catalog.catalog
        named = [pipe for pipe in pipes if pipe.name == config.pipe]
        if config.pipe is not None and not named:
            raise LakeError(
                f"pipe {config.pipe} does not feed table {table.name}",
                f"name one of its pipes: {', '.join(pipe.name for pipe in pipes)}",
            )
        running = [
            current
            for pipe in named or pipes
            if (current := lake.find(PipeEntry, pipe.name))
            and not current.paused
            and not current.invalid_reason
        ]
        session = sessions(lake, catalog.settings, lambda: spark.spark_session)
        loads = Loads()
        for pipe in running:
            if pipe.pipe_kind is PipeKind.KAFKA:
                if (done := run_batch(session, pipe.name)) is not None:
                    loads.batches.append(done)
                continue
            loads.files.append(
                ingest(
                    session.spark, lake, catalog.settings, pipe_copy(pipe), pipe.name, config.files
                )
            )
        # What the volumes hold now, loaded files purged: the table's materialization (the next
        # step) reads these data versions, so the table is stale only once a volume changes again.
        for pipe in _volume_pipes(running):
            volume = lake.get(VolumeEntry, pipe.volume)
            context.log_event(
                volume_observation(volume, volume_files(lake, catalog.settings, volume))
            )
        return loads

    return load


def report_op(table: TableEntry, checks: list[AssetCheckSpec]) -> OpDefinition:
    """Materializes the table with what the loads did, and runs its checks; first tags the run
    with the readers it refreshes next (see automation.load_run_selection), so that their
    automation counts the load as read."""
    outs = {table.name: Out(), **{check.get_python_identifier(): Out() for check in checks}}

    @op(name=f"report_{table.name}", out=outs)
    def report(
        context: OpExecutionContext, loads: Loads, catalog: CatalogResource
    ) -> Iterator[Any]:
        if after := context.job_def.asset_layer.selected_asset_keys - {AssetKey(table.name)}:
            tags = {refreshed_in_load_run(key): table.name for key in after}
            context.instance.add_run_tags(context.run_id, tags)
        outcomes = loads.files
        current = catalog.catalog.get(TableEntry, table.name)
        failed = with_status(loads, LoadStatus.LOAD_FAILED)
        if failed:
            context.log.error(f"{table.name}: {failure_text(failed)}")
        if skipped := with_status(loads, LoadStatus.SKIPPED_CHANGED):
            context.log.warning(
                f"{table.name}: {len(skipped)} file(s) skipped: {CHANGED_SINCE_LOADED}; first: "
                f"{skipped[0].file_path}: {skipped[0].first_error_message}"
            )
        yield MaterializeResult(
            asset_key=table.name,
            # The Delta version: a load that committed nothing leaves what reads the table fresh.
            data_version=DataVersion(str(current.version or 0)),
            metadata={
                "rows_loaded": sum(o.rows for o in outcomes)
                + sum(b.batch.rows or 0 for b in loads.batches),
                "rows_rejected": sum(o.rejected for o in outcomes),
                "files_loaded": sum(
                    o.count(LoadStatus.LOADED) + o.count(LoadStatus.PARTIALLY_LOADED)
                    for o in outcomes
                ),
                "files_failed": sum(o.count(LoadStatus.LOAD_FAILED) for o in outcomes),
                "files_skipped_changed": sum(o.count(LoadStatus.SKIPPED_CHANGED) for o in outcomes),
                "files_purged": sum(len(o.purged) for o in outcomes),
                "dagster/row_count": MetadataValue.int(current.row_count or 0),
                "lake/version": MetadataValue.int(current.version or 0),
                **schema_metadata(current, any(o.version == current.version for o in outcomes)),
                **batch_metadata(loads.batches),
                **({"lake/first_error": failure_text(failed)} if failed else {}),
                **counts_metadata(current),
            },
        )
        yield from load_check_results(current, loads, {check.name for check in checks})

    return report


def ingestion_asset(
    table: TableEntry, pipes: list[PipeEntry], sessions: Sessions
) -> AssetsDefinition:
    """The table, materialized by loading its running pipes' pending files and batches. Two
    steps: Dagster reads the volumes' data versions when the materializing step starts, so that
    step comes after the load has observed them."""
    checks = load_checks(table, pipes)
    load, report = load_op(table, pipes, sessions), report_op(table, checks)
    names = [table.name, *(check.get_python_identifier() for check in checks)]

    @graph_multi_asset(
        name=f"ingest_{table.name}",
        outs={
            table.name: AssetOut(
                key=table.name,
                description=None if table.comment is None else markdown_text(table.comment),
                kinds={"delta", "spark"},
                metadata=table_metadata(table),
            )
        },
        ins={
            name: AssetIn(key=key, dagster_type=Nothing) for name, key in _upstream(pipes).items()
        },
        check_specs=checks,
        config=_load_config(table.name),
        # A graph's outputs take the graph's group (theirs is ignored): the table stays in
        # `tables` with the tables SQL writes.
        group_name=TABLES_GROUP,
    )
    def ingest_table(**upstream: Any) -> dict[str, Any]:
        return dict(zip(names, report(load(**upstream)), strict=True))

    return ingest_table


def ingestion_job(table: str) -> Any:
    """Runs of one table's ingestion carry its object tag: the instance runs one at a time. They
    refresh the assets that refresh in a load's run after the load, on its session (see
    automation.load_run_selection): one run, and no second wait for the automation's tick."""
    return define_asset_job(
        f"ingest_{table}_job",
        selection=load_run_selection(table),
        tags={OBJECT_TAG: f"table:{table}", LOAD_RUN_TAG: table},
    )


def _sensor_of(pipe: PipeEntry) -> Any:
    if pipe.pipe_kind is PipeKind.KAFKA:
        return kafka_pipe_sensor
    if pipe.ingest_mode == IngestMode.EVENT_NOTIFICATION:
        return event_pipe_sensor
    return pipe_sensor


def batch_metadata(batches: list[BatchOutcome]) -> dict[str, Any]:
    """Kafka batches' figures, plotted run after run: offsets read, rows, bad messages, lag."""
    if not batches:
        return {}
    lags = [b.lag for b in batches if b.lag is not None]
    return {
        "kafka_offsets_read": sum(
            b.batch.end[p] - b.batch.start[p] for b in batches for p in b.batch.start
        ),
        "kafka_rows": sum(b.batch.rows or 0 for b in batches),
        "kafka_bad_messages": sum(b.batch.bad or 0 for b in batches),
        "kafka_lag": sum(sum(lag.values()) for lag in lags) if lags else None,
        "lake/kafka_offsets": MetadataValue.json(
            {b.pipe: {str(p): o for p, o in b.batch.end.items()} for b in batches}
        ),
    }


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Per table fed by pipes: its ingestion asset and job (which refreshes the table's readers
    that refresh in a load's run), and one sensor per pipe; each Kafka pipe's topic as an
    external asset."""
    pipes_by_table: dict[str, list[PipeEntry]] = defaultdict(list)
    for pipe in catalog.entries(PipeEntry):
        kafka = pipe.pipe_kind is PipeKind.KAFKA
        if catalog.find(TableEntry, pipe.table) and (
            kafka or catalog.find(VolumeEntry, pipe.volume)
        ):
            pipes_by_table[pipe.table].append(pipe)
    assets, jobs, sensors = [], [], []
    for table in catalog.entries(TableEntry):
        pipes = pipes_by_table.get(table.name)
        if not pipes:
            continue
        assets.append(ingestion_asset(table, pipes, sessions))
        job = ingestion_job(table.name)
        jobs.append(job)
        sensors += [_sensor_of(pipe)(pipe, job, settings) for pipe in pipes]
    topics = {
        pipe.topic: topic_spec(pipe)
        for pipes in pipes_by_table.values()
        for pipe in pipes
        if pipe.pipe_kind is PipeKind.KAFKA
    }
    return Definitions(assets=[*assets, *topics.values()], jobs=jobs, sensors=sensors)
