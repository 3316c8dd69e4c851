"""Dynamic tables → assets that refresh themselves when a source changes or on their interval."""

import json
from collections.abc import Iterator

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    MaterializeResult,
    MetadataValue,
    asset,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refresh import (
    MANUAL,
    SCHEDULED,
    UPSTREAM,
    RefreshOutcome,
    record_skipped,
    refresh,
    sources_of,
)
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

DYNAMIC_TABLES_GROUP = "dynamic_tables"
AUTOMATION_SENSOR = "lake_automation"
# How often the daemon evaluates automation conditions (Dagster's default is 30 s).
AUTOMATION_INTERVAL_SECONDS = 5
_FROM_AUTOMATION = "dagster/from_automation_condition"


def refresh_cron(seconds: int) -> str:
    """REFRESH INTERVAL as cron; cron's grain is a minute, so shorter intervals tick each minute."""
    minutes = max(1, seconds // 60)
    if minutes < 60:
        return "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    hours = minutes // 60
    if hours < 24:
        return f"0 */{hours} * * *"
    return f"0 0 */{hours // 24} * *"


def automation_condition(entry: DynamicTableEntry) -> AutomationCondition:
    """Eager on upstream change; with REFRESH INTERVAL, also on every cron tick."""
    eager = AutomationCondition.eager()
    if entry.refresh_interval_seconds is None:
        return eager
    tick = AutomationCondition.cron_tick_passed(refresh_cron(entry.refresh_interval_seconds))
    return eager | (tick & ~AutomationCondition.in_progress()).with_label("refresh interval")


def _updated_after(instance: DagsterInstance, keys: list[AssetKey], since: float) -> bool:
    events = [instance.get_latest_materialization_event(key) for key in keys]
    return any(event is not None and event.timestamp > since for event in events)


def _trigger(context: AssetExecutionContext, entry: DynamicTableEntry) -> str:
    """Who asked: a person (MANUAL), a source's change (UPSTREAM) or the interval (SCHEDULED)."""
    if context.run.tags.get(_FROM_AUTOMATION) != "true":
        return MANUAL
    if entry.refresh_interval_seconds is None:
        return UPSTREAM
    last = context.instance.get_latest_materialization_event(AssetKey(entry.name))
    since = last.timestamp if last is not None else 0.0
    sources = [AssetKey(name) for name in sources_of(entry)]
    return UPSTREAM if _updated_after(context.instance, sources, since) else SCHEDULED


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


def _metadata(outcome: RefreshOutcome, entry: DynamicTableEntry) -> dict:
    return {
        "refresh_mode": outcome.mode or "",
        "refresh_trigger": outcome.trigger,
        "full_refresh_reason": outcome.reason or "",
        "rows_inserted": outcome.rows_inserted,
        "rows_deleted": outcome.rows_deleted,
        "duration_seconds": MetadataValue.float(round(outcome.duration, 3)),
        "source_versions": MetadataValue.json(outcome.source_versions),
        "dagster/row_count": MetadataValue.int(entry.row_count or 0),
        "lake/version": MetadataValue.int(entry.version or 0),
    }


def dynamic_table_asset(entry: DynamicTableEntry) -> AssetsDefinition:
    """The dynamic table, refreshed through the Spark resource; one refresh at a time (its pool)."""

    @asset(
        name=entry.name,
        deps=[AssetKey(name) for name in sources_of(entry)],
        description=entry.comment or f"dynamic table: {entry.query}",
        group_name=DYNAMIC_TABLES_GROUP,
        kinds={"delta", "spark"},
        automation_condition=automation_condition(entry),
        pool=f"dynamic_table_{entry.name}",
        output_required=False,
        metadata={"lake/query": entry.query, "lake/sources": json.dumps(sources_of(entry))},
    )
    def refresh_dynamic_table(
        context: AssetExecutionContext, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> Iterator[MaterializeResult]:
        lake = catalog.catalog
        trigger = _trigger(context, entry)
        failed = _failed_upstream(context.instance, entry)
        if failed is not None and trigger != MANUAL:
            reason = f"the latest refresh or load of {failed} failed"
            record_skipped(lake, entry.name, trigger, reason)
            context.log.warning(f"{entry.name}: SKIPPED, {reason}")
            return
        outcome = refresh(spark.spark_session, lake, entry.name, trigger)
        context.log.info(outcome.summary())
        if outcome.mode in (None, "NO_DATA"):
            return
        yield MaterializeResult(
            metadata=_metadata(outcome, lake.get(DynamicTableEntry, entry.name))
        )

    return refresh_dynamic_table


def automation_sensor() -> AutomationConditionSensorDefinition:
    """Evaluates the dynamic tables' conditions every few seconds, running from the start."""
    return AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=AssetSelection.groups(DYNAMIC_TABLES_GROUP),
        minimum_interval_seconds=AUTOMATION_INTERVAL_SECONDS,
        default_status=DefaultSensorStatus.RUNNING,
    )


def build_defs(catalog: Catalog, settings: LakeSettings) -> Definitions:
    """Each dynamic table as an asset, and the sensor that evaluates their automation."""
    entries = catalog.entries(DynamicTableEntry)
    return Definitions(
        assets=[dynamic_table_asset(entry) for entry in entries],
        sensors=[automation_sensor()] if entries else [],
    )
