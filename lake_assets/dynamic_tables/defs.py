"""Dynamic tables → assets that refresh themselves when a source changes or on their interval."""

import json
from collections.abc import Iterator

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    DagsterInstance,
    DagsterRunStatus,
    DataVersion,
    DefaultScheduleStatus,
    Definitions,
    FloatMetadataValue,
    IntMetadataValue,
    JsonMetadataValue,
    MaterializeResult,
    MetadataValue,
    ScheduleDefinition,
    asset,
    define_asset_job,
)

from lake_assets.automation import AUTOMATION_INTERVAL_SECONDS, automation_sensor, refresh_cron
from lake_assets.core.catalog import Catalog
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.kind import AUTOMATION_SENSOR
from lake_assets.dynamic_tables.refresh import (
    RefreshOutcome,
    record_skipped,
    refresh,
    sources_of,
)
from lake_assets.dynamic_tables.refreshes import RefreshTrigger
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

DYNAMIC_TABLES_GROUP = "dynamic_tables"
# Who asked for a run: the automation sensor tags UPSTREAM, an interval's schedule SCHEDULED;
# a run without it was started by a person (MANUAL).
TRIGGER_TAG = "lake/refresh_trigger"


def interval_schedule(entry: DynamicTableEntry, seconds: int) -> ScheduleDefinition:
    """REFRESH INTERVAL: a schedule whose runs say they were SCHEDULED."""
    job = define_asset_job(
        f"refresh_{entry.name}_job",
        selection=[entry.name],
        tags={TRIGGER_TAG: RefreshTrigger.SCHEDULED.value},
    )
    return ScheduleDefinition(
        name=f"{entry.name}_refresh_interval",
        cron_schedule=refresh_cron(seconds),
        job=job,
        default_status=DefaultScheduleStatus.RUNNING,
    )


def _trigger(context: AssetExecutionContext) -> RefreshTrigger:
    return RefreshTrigger(context.run.tags.get(TRIGGER_TAG, RefreshTrigger.MANUAL))


def _failed_upstream(instance: DagsterInstance, entry: DynamicTableEntry) -> str | None:
    """A source whose latest planned materialization failed: a refresh now would read stale rows."""
    for name in sources_of(entry):
        planned = instance.get_latest_planned_materialization_info(AssetKey(name))
        if planned is None:
            continue
        run = instance.get_run_by_id(planned.run_id)
        if run is not None and run.status == DagsterRunStatus.FAILURE:
            return name
    return None


# What a refresh's materialization says of it: numbers Dagster plots, texts it shows.
_Metadata = dict[str, str | int | FloatMetadataValue | IntMetadataValue | JsonMetadataValue]


def _metadata(outcome: RefreshOutcome, entry: DynamicTableEntry) -> _Metadata:
    return {
        # Dagster stores metadata as text and numbers, not enums.
        "refresh_mode": str(outcome.mode or ""),
        "refresh_trigger": str(outcome.trigger),
        "full_refresh_reason": outcome.reason or "",
        "rows_inserted": outcome.rows_inserted,
        "rows_deleted": outcome.rows_deleted,
        "duration_seconds": MetadataValue.float(round(outcome.duration, 3)),
        "source_versions": MetadataValue.json(outcome.source_versions),
        "dagster/row_count": MetadataValue.int(entry.row_count or 0),
        "lake/version": MetadataValue.int(entry.version or 0),
    }


# A source's new data version (its Delta version): a load or refresh that committed nothing
# keeps it, and requests nothing downstream.
_SOURCE_CHANGED = AutomationCondition.any_deps_match(AutomationCondition.data_version_changed())
# Dagster's eager(), but a source update counts as handled only by a refresh requested after it:
# eager() also counts a materialization, and a refresh already running when a source commits
# again ends after that commit without having read it. An update seen on the tick right after a
# request may have come after the refresh read its sources, so it is not handled either.
REFRESH_AFTER_SOURCE_UPDATES = (
    (AutomationCondition.newly_missing() | _SOURCE_CHANGED).since(
        (AutomationCondition.newly_requested() & ~_SOURCE_CHANGED)
        | AutomationCondition.initial_evaluation()
    )
    & ~AutomationCondition.any_deps_missing()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("refresh after source updates")


def dynamic_table_asset(entry: DynamicTableEntry) -> AssetsDefinition:
    """The dynamic table, refreshed through the Spark resource; one refresh at a time (its pool)."""

    @asset(
        name=entry.name,
        deps=[AssetKey(name) for name in sources_of(entry)],
        description=markdown_text(entry.comment or f"dynamic table: {entry.query}"),
        group_name=DYNAMIC_TABLES_GROUP,
        kinds={"delta", "spark"},
        automation_condition=REFRESH_AFTER_SOURCE_UPDATES,
        pool=f"dynamic_table_{entry.name}",
        output_required=False,
        metadata={"lake/query": entry.query, "lake/sources": json.dumps(sources_of(entry))},
    )
    def refresh_dynamic_table(
        context: AssetExecutionContext, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> Iterator[MaterializeResult[None]]:
        lake = catalog.catalog
        trigger = _trigger(context)
        failed = _failed_upstream(context.instance, entry)
        if failed is not None and trigger != RefreshTrigger.MANUAL:
            reason = f"the latest refresh or load of {failed} failed"
            record_skipped(lake, entry.name, trigger, reason)
            context.log.warning(f"{entry.name}: SKIPPED, {reason}")
            return
        outcome = refresh(spark.spark_session, lake, entry.name, trigger)
        context.log.info(outcome.summary())
        if outcome.mode is None:
            return
        refreshed = lake.get(DynamicTableEntry, entry.name)
        # The Delta version is the data version, as for every commit reported to Dagster. A
        # NO_DATA refresh materializes the same version: the table is current with its sources'
        # new versions (not "Unsynced"), and what reads it has nothing new.
        yield MaterializeResult(
            data_version=DataVersion(str(refreshed.version or 0)),
            metadata=_metadata(outcome, refreshed),
        )

    return refresh_dynamic_table


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Each dynamic table as an asset, and the sensor that evaluates their automation."""
    entries = catalog.entries(DynamicTableEntry)
    sensor = automation_sensor(
        AUTOMATION_SENSOR,
        DYNAMIC_TABLES_GROUP,
        AUTOMATION_INTERVAL_SECONDS,
        {TRIGGER_TAG: RefreshTrigger.UPSTREAM.value},
    )
    return Definitions(
        assets=[dynamic_table_asset(entry) for entry in entries],
        sensors=[sensor] if entries else [],
        schedules=[
            interval_schedule(entry, entry.refresh_interval_seconds)
            for entry in entries
            if entry.refresh_interval_seconds is not None
        ],
    )
