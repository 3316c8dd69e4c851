"""Pipes and one-shot COPY INTO: list a volume, load what is pending, purge what was loaded."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from lake_assets.core import failpoints
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import drop_object, name_taken
from lake_assets.core.results import Result
from lake_assets.core.settings import LakeSettings
from lake_assets.core.spark_errors import Failure, retrying
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS, tick_period
from lake_assets.pipes.copy_grammar import CopyIntoTable, copy_of
from lake_assets.pipes.entry import IngestMode, PipeEntry, PipeKind, PipeStatus
from lake_assets.pipes.grammar import AlterPipe, CreatePipe, KafkaCopy
from lake_assets.pipes.kafka import ledger
from lake_assets.pipes.kafka.batches import run_batch
from lake_assets.pipes.kafka.engine import create_kafka_pipe, describe_kafka_pipe
from lake_assets.pipes.load_records import LoadStatus, load_history
from lake_assets.pipes.loading import LoadOutcome, load, reconcile, target_columns
from lake_assets.pipes.planning import LoadPlan, loaded_files, plan_files, skip_changed
from lake_assets.pipes.validation import validate
from lake_assets.sql.statements import DescribeObject, DropObject
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import in_scope, named_files, source_files, store_of
from resources.storage import FileInfo, VolumeStore, split_location

# Where tests kill this process to prove crash safety (LAKE_FAILPOINT=<name>).
BEFORE_PURGE = "load-before-purge"
# Tries of a load that keeps losing its commit to changes of the table's metadata, and the wait
# before the second (doubled before each next).
_METADATA_RACE_TRIES, _FIRST_WAIT_SECONDS = 4, 0.2

# What a volume pipe does with a file it cannot load (its error is in load_history and DESC PIPE).

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def pipe_copy(pipe: PipeEntry) -> CopyIntoTable:
    """The pipe's COPY statement, parsed again from the text the catalog keeps."""
    return copy_of(pipe.copy_statement)


def ingest(
    spark: SparkSession,
    catalog: Catalog,
    settings: LakeSettings,
    copy: CopyIntoTable,
    pipe: str | None = None,
    paths: list[str] | None = None,
) -> LoadOutcome:
    """Load every pending file of the COPY's volume (or of `paths`, named by S3 events) once,
    and record the loaded files that changed since and are skipped; with PURGE, delete the
    loaded ones. A load whose commit lost to another statement's change of the table's metadata
    (an ALTER TABLE t ADD COLUMN meanwhile) committed nothing: it is planned again from the table
    as it is now, so that both land."""
    return retrying(
        lambda: _ingest(spark, catalog, settings, copy, pipe, paths),
        when=lambda failure: Failure.LOST_METADATA_RACE in failure,
        attempts=_METADATA_RACE_TRIES,
        first_wait=_FIRST_WAIT_SECONDS,
    )


def _ingest(
    spark: SparkSession,
    catalog: Catalog,
    settings: LakeSettings,
    copy: CopyIntoTable,
    pipe: str | None,
    paths: list[str] | None,
) -> LoadOutcome:
    table = recorded_schema(catalog, catalog.get(TableEntry, copy.table))
    volume = catalog.get(VolumeEntry, copy.source.volume)
    store = store_of(catalog, settings, volume)
    fence = reconcile(spark, catalog, table)
    if paths is None:
        files = source_files(copy.source, volume, store)
    else:
        files = named_files(copy.source, volume, store, paths)
    plan = plan_files(
        catalog,
        table.name,
        files,
        settings.load_history_days,
        force=copy.force,
        reload_changed=copy.reload_changed,
        complete=paths is not None,
    )
    outcome = load(
        spark, catalog, table, copy.source, store, plan.pending,
        fence=fence, pipe=pipe, on_error=copy.on_error, match=copy.match_by_name,
    )  # fmt: skip
    outcome.records += skip_changed(catalog, table.name, plan.changed, pipe)
    if copy.purge:
        failpoints.reached(BEFORE_PURGE)
        outcome.purged = purge(catalog, settings, table.name, store, files)
    return outcome


def purge(
    catalog: Catalog, settings: LakeSettings, table: str, store: VolumeStore, files: list[FileInfo]
) -> list[str]:
    """Delete source files whose rows are committed, including ones a crash left behind."""
    done = loaded_files(catalog, table, files, settings.load_history_days)
    for info in done:
        store.delete(info.relative_path)
    return [info.relative_path for info in done]


def copy_into_table(session: Context, copy: CopyIntoTable) -> Result:
    if copy.validation is not None:
        return validate(session.spark, session.catalog, session.settings, copy, copy.validation)
    return session.committing(
        copy.table,
        lambda: Result.status(
            ingest(session.spark, session.catalog, session.settings, copy).summary()
        ),
    )


def alter_pipe(session: Context, stmt: AlterPipe) -> Result:
    pipe = session.catalog.get(PipeEntry, stmt.name)
    if stmt.refresh and pipe.pipe_kind is PipeKind.KAFKA:
        # A stopped pipe is tried again: the reason comes back if its cause is still there.
        session.catalog.update(PipeEntry, pipe.name, lambda now: replace(now, invalid_reason=None))
        done = run_batch(session, pipe.name)
        return Result.status(done.summary() if done else f"pipe {pipe.name}: no new messages")
    if stmt.refresh:
        outcome = ingest(
            session.spark, session.catalog, session.settings, pipe_copy(pipe), pipe.name
        )
        return Result.status(outcome.summary())
    session.catalog.update(PipeEntry, pipe.name, lambda now: replace(now, paused=bool(stmt.paused)))
    state = PipeStatus.PAUSED if stmt.paused else PipeStatus.RUNNING
    return Result.status(f"pipe {pipe.name} is {state}")


def create_pipe(session: Context, stmt: CreatePipe) -> Result:
    catalog, settings = session.catalog, session.settings
    if taken := name_taken(session, PipeEntry, stmt.name, stmt.if_not_exists):
        return taken
    if stmt.name in session.sensor_names():
        raise LakeError(
            f"pipe name {stmt.name} is taken by one of the project's own sensors",
            "pick another name for the pipe",
        )
    if isinstance(stmt.copy, KafkaCopy):
        return create_kafka_pipe(session, stmt, stmt.copy)
    target_columns(catalog.get(TableEntry, stmt.copy.table), stmt.copy.source)
    volume = catalog.get(VolumeEntry, stmt.copy.source.volume)
    sharing = [p.name for p in catalog.entries(PipeEntry) if p.volume == volume.name]
    if sharing:
        raise LakeError(
            f"volume {volume.name} already feeds pipe {sharing[0]}",
            "give each pipe its own volume (a separate subdirectory)",
        )
    if stmt.ingest_mode == IngestMode.EVENT_NOTIFICATION:
        _check_notification(stmt.name, stmt.copy, volume)
    store_of(catalog, settings, volume)
    catalog.add(
        PipeEntry(
            name=stmt.name,
            created_at=now_utc(),
            volume=volume.name,
            table=stmt.copy.table,
            copy_statement=stmt.copy_text,
            ingest_mode=stmt.ingest_mode,
            virtual_cluster=stmt.virtual_cluster,
            comment=stmt.comment,
            poll_interval_seconds=stmt.poll_interval_seconds,
            backfill_interval_seconds=stmt.backfill_interval_seconds,
        )
    )
    every = polling_text(stmt.poll_interval_seconds)
    if stmt.ingest_mode == IngestMode.EVENT_NOTIFICATION:
        return Result.status(
            f"created pipe {stmt.name}: RUNNING, reads S3 events from queue {volume.queue_name} "
            f"{every} and lists volume {volume.name} every "
            f"{stmt.backfill_interval_seconds} s for missed ones (with the Dagster daemon running)"
        )
    return Result.status(
        f"created pipe {stmt.name}: RUNNING, looks for new files in volume {volume.name} "
        f"{every} (with the Dagster daemon running)"
    )


def polling_text(seconds: int) -> str:
    """How often the pipe looks, as its sensor ticks: POLL_INTERVAL on whole daemon loops."""
    period = tick_period(seconds)
    if period == seconds:
        return f"every {period} s"
    loop = f"the Dagster daemon's {DAEMON_LOOP_SECONDS}-s loop"
    return f"every {period} s (POLL_INTERVAL = {seconds}, on {loop})"


def _check_notification(name: str, copy: CopyIntoTable, volume: VolumeEntry) -> None:
    """EVENT_NOTIFICATION needs an S3 volume whose events go to an SQS queue; it keeps files."""
    mode = f"pipe {name}: INGEST_MODE = 'EVENT_NOTIFICATION'"
    if copy.purge:
        raise LakeError(
            f"{mode} keeps the source files, so PURGE = TRUE cannot apply",
            "drop PURGE = TRUE, or use INGEST_MODE = 'LIST_PURGE' to delete loaded files",
        )
    if split_location(volume.location)[0] == "file":
        raise LakeError(
            f"{mode} needs object storage events, but volume {volume.name} is a local "
            f"directory ({volume.location})",
            "use INGEST_MODE = 'LIST_PURGE' for local volumes",
        )
    if volume.queue_name is None:
        raise LakeError(
            f"{mode} needs a queue, but volume {volume.name} has no NOTIFICATION",
            f"DROP VOLUME {volume.name} and CREATE it again with NOTIFICATION = "
            "(QUEUE_TYPE = 'AWS_SQS', QUEUE_NAME = '…'), the SQS queue the bucket's "
            "event notifications go to",
        )
    if (volume.queue_type or "").upper() != "AWS_SQS":
        raise LakeError(
            f"{mode}: volume {volume.name}'s QUEUE_TYPE '{volume.queue_type or ''}' is not "
            "supported",
            "send the bucket's event notifications to an SQS queue (any S3-compatible "
            "endpoint's SQS API) and use QUEUE_TYPE = 'AWS_SQS'",
        )


def volume_listing(catalog: Catalog, settings: LakeSettings, pipe: PipeEntry) -> list[FileInfo]:
    """The pipe's volume listed once, deep enough for the COPY's FILES: a sensor tick's look."""
    volume = catalog.get(VolumeEntry, pipe.volume)
    deep = volume.recursive or pipe_copy(pipe).source.files is not None
    return store_of(catalog, settings, volume).list(recursive=deep)


def plan_for(
    catalog: Catalog,
    settings: LakeSettings,
    pipe: PipeEntry,
    listing: list[FileInfo],
    complete: bool = False,
) -> LoadPlan:
    """What the pipe would do now with files of a listing (or announced `complete`): load them,
    or skip them as changed since loaded; cheap (the index), no Spark."""
    copy = pipe_copy(pipe)
    volume = catalog.get(VolumeEntry, copy.source.volume)
    files = [info for info in listing if in_scope(copy.source, volume, info.relative_path)]
    return plan_files(
        catalog,
        copy.table,
        files,
        settings.load_history_days,
        reload_changed=copy.reload_changed,
        complete=complete,
    )


def invalid_reason(catalog: Catalog, pipe: PipeEntry) -> str | None:
    if catalog.find(TableEntry, pipe.table) is None:
        return f"table {pipe.table} does not exist"
    if catalog.find(VolumeEntry, pipe.volume) is None:
        return f"volume {pipe.volume} does not exist"
    return None


def describe_pipe(session: Context, stmt: DescribeObject) -> Result:
    catalog, settings = session.catalog, session.settings
    pipe = catalog.get(PipeEntry, stmt.name)
    if pipe.pipe_kind is PipeKind.KAFKA:
        return describe_kafka_pipe(session, pipe)
    reason = invalid_reason(catalog, pipe)
    plan = (
        None
        if reason
        else plan_for(catalog, settings, pipe, volume_listing(catalog, settings, pipe))
    )
    volume = catalog.find(VolumeEntry, pipe.volume)
    notified = pipe.ingest_mode == IngestMode.EVENT_NOTIFICATION
    queue = f"{volume.queue_type}:{volume.queue_name}" if notified and volume else None
    loads = [r for r in load_history(catalog, pipe.table) if r.pipe_name == pipe.name]
    # A skipped change is no load, but as a failure it says why the file's rows are missing.
    troubles = [
        r for r in loads if r.status in (LoadStatus.LOAD_FAILED, LoadStatus.SKIPPED_CHANGED)
    ]
    done = [r for r in loads if r.status != LoadStatus.SKIPPED_CHANGED]
    copy = copy_of(pipe.copy_statement)
    return Result.properties(
        **{
            "name": pipe.name,
            "pipe_status": pipe.status,
            "pipe_kind": "VOLUME",
            "ingest_mode": pipe.ingest_mode,
            "input_name": pipe.volume,
            "output_name": pipe.table,
            "copy_statement": pipe.copy_statement,
            "virtual_cluster": pipe.virtual_cluster,
            "poll_interval_seconds": tick_period(pipe.poll_interval_seconds),
            "notification_queue": queue,
            "backfill_interval_seconds": pipe.backfill_interval_seconds if notified else None,
            "invalid_reason": reason,
            "files_pending": None if plan is None else len(plan.pending),
            "files_loaded": sum(1 for r in loads if r.status.loaded),
            "files_failed": sum(1 for r in loads if r.status == LoadStatus.LOAD_FAILED),
            # Loaded files in the volume now that changed since and are not loaded again.
            "files_skipped_changed": None if plan is None else len(plan.changed),
            "rows_rejected": sum(r.rows_rejected for r in loads),
            "on_error": str(copy.on_error),
            "on_load_failure": copy.on_error.on_failure(pipe.table),
            "last_error": f"{troubles[0].file_path}: {troubles[0].first_error_message}"
            if troubles
            else None,
            "last_load": done[0].last_copy_time if done else None,
            "comment": pipe.comment,
            "created_at": pipe.created_at,
        }
    )


def show_pipes(session: Context) -> Result:
    return Result(
        ["name", "pipe_status", "pipe_kind", "input_name", "output_name", "ingest_mode", "comment"],
        [
            (p.name, p.status, p.pipe_kind, p.input_name, p.table,
             p.ingest_mode if p.pipe_kind is PipeKind.VOLUME else None, p.comment)
            for p in session.catalog.entries(PipeEntry)
        ],
    )  # fmt: skip


def drop_pipe(session: Context, stmt: DropObject) -> Result:
    """DROP PIPE: the table keeps its rows; a Kafka pipe's batches go with it."""
    result = drop_object(PipeEntry)(session, stmt)
    ledger.forget_batches(session.catalog, stmt.name)
    return result
