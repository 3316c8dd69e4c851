"""Dynamic tables → assets that refresh themselves when a source changes or on their interval."""

import json
from collections.abc import Iterator
from datetime import timedelta

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetsDefinition,
    AutomationCondition,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    DataVersion,
    Definitions,
    FloatMetadataValue,
    FreshnessPolicy,
    IntMetadataValue,
    JsonMetadataValue,
    MaterializeResult,
    MetadataValue,
    SensorDefinition,
    asset,
)

from lake_assets.automation import (
    AUTOMATION_INTERVAL_SECONDS,
    DATA_VERSION_TAG,
    LOAD_RUN_TAG,
    REFRESHES_IN_LOAD_RUN,
    automation_sensor,
    interval_sensor,
    refreshed_in_load_run,
)
from lake_assets.core.catalog import Catalog
from lake_assets.core.intervals import Interval
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.entry import DynamicTableEntry, TargetLag
from lake_assets.dynamic_tables.freshness import lag_sensor
from lake_assets.dynamic_tables.kind import AUTOMATION_SENSOR, INTERVALS_SENSOR, LAG_SENSOR
from lake_assets.dynamic_tables.refresh import Refreshed, RefreshOutcome, record_skipped, refresh
from lake_assets.dynamic_tables.refreshes import RefreshTrigger
from lake_assets.dynamic_tables.snapshots import sources_of
from lake_assets.tables.checks import check_results, check_specs, counts_metadata, evaluations
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

DYNAMIC_TABLES_GROUP = "dynamic_tables"
# Who asked for a run: the automation sensor tags UPSTREAM, the intervals and lag sensors
# SCHEDULED; a run without it was started by a person (MANUAL).
TRIGGER_TAG = "lake/refresh_trigger"


def intervals_sensor(entries: list[DynamicTableEntry]) -> list[SensorDefinition]:
    """REFRESH INTERVAL: the sensor that refreshes tables at exact intervals from their creation,
    in runs that say they were SCHEDULED (automation.interval_sensor), if any table has one."""
    intervals = {
        AssetKey(entry.name): Interval(entry.created_at, entry.refresh_interval_seconds)
        for entry in entries
        if entry.refresh_interval_seconds is not None
    }
    if not intervals:
        return []
    sensor = interval_sensor(
        INTERVALS_SENSOR,
        "refreshes each dynamic table with a REFRESH INTERVAL",
        intervals,
        {TRIGGER_TAG: RefreshTrigger.SCHEDULED.value},
    )
    return [sensor]


def _trigger(context: AssetExecutionContext) -> RefreshTrigger:
    """A load's run refreshes its readers as their automation would: UPSTREAM."""
    if LOAD_RUN_TAG in context.run.tags:
        return RefreshTrigger.UPSTREAM
    return RefreshTrigger(context.run.tags.get(TRIGGER_TAG, RefreshTrigger.MANUAL))


def _failed_upstream(instance: DagsterInstance, sources: tuple[str, ...]) -> str | None:
    """A source whose latest planned materialization failed: a refresh now would read stale rows.
    A run that materialized the source and failed later (a refresh in a load's run) loaded it."""
    for name in sources:
        planned = instance.get_latest_planned_materialization_info(AssetKey(name))
        if planned is None:
            continue
        run = instance.get_run_by_id(planned.run_id)
        if (
            run is not None
            and run.status == DagsterRunStatus.FAILURE
            and not _materialized_in(instance, run.run_id, name)
        ):
            return name
    return None


def _materialized_in(instance: DagsterInstance, run_id: str, name: str) -> bool:
    events = instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
    return any(
        event.asset_materialization is not None
        and event.asset_materialization.asset_key == AssetKey(name)
        for event in events
    )


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
        # How far behind its base tables it had fallen when this refresh caught it up.
        "lake/lag_seconds": MetadataValue.float(round(outcome.lag_seconds or 0.0, 3)),
    }


def _reporter(context: AssetExecutionContext, catalog: Catalog) -> Refreshed:
    """A dynamic table upstream refreshed first by this one's refresh: an event of its asset."""

    def report(outcome: RefreshOutcome) -> None:
        refreshed = catalog.get(DynamicTableEntry, outcome.name)
        context.log.info(f"{outcome.name} first: {outcome.summary()}")
        context.instance.report_runless_asset_event(
            AssetMaterialization(
                outcome.name,
                metadata={**_metadata(outcome, refreshed), **counts_metadata(refreshed)},
                tags={DATA_VERSION_TAG: str(outcome.version)},
            )
        )
        for evaluation in evaluations(refreshed):
            context.instance.report_runless_asset_event(evaluation)

    return report


def refresh_after_source_updates(name: str) -> AutomationCondition[AssetKey | AssetCheckKey]:
    """Dagster's eager(), but a source update counts as handled only by a refresh requested after
    it, or by the refresh that followed it in the run that made it (a load's run:
    automation.load_run_selection): eager() also counts any materialization, and a refresh already
    running when a source commits again ends after that commit without having read it. An update
    seen on the tick right after a request may have come after the refresh read its sources, so it
    is not handled either."""
    # A source's new data version (its Delta version): a load or refresh that committed nothing
    # keeps it, and requests nothing downstream.
    updated = AutomationCondition.any_deps_match(AutomationCondition.data_version_changed())
    # An update made by a load's run that refreshes this table after it is handled by that
    # refresh once it commits; a later commit is not (it is the source's latest update, from a
    # run without the tag). A refresh that failed or never ran in the load's run leaves the
    # update unhandled, so the automation asks for one.
    not_in_load_run = AutomationCondition.any_deps_match(
        AutomationCondition.data_version_changed()
        & ~AutomationCondition.executed_with_tags(tag_keys={refreshed_in_load_run(AssetKey(name))})
    )
    refreshed_in_load = (
        AutomationCondition.newly_updated()
        & AutomationCondition.executed_with_tags(tag_keys={LOAD_RUN_TAG})
    )
    return (
        (AutomationCondition.newly_missing() | updated).since(
            ((AutomationCondition.newly_requested() | refreshed_in_load) & ~not_in_load_run)
            | AutomationCondition.initial_evaluation()
        )
        & ~AutomationCondition.any_deps_missing()
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
    ).with_label("refresh after source updates")


def dynamic_table_asset(
    entry: DynamicTableEntry, sources: tuple[str, ...], in_load_run: bool
) -> AssetsDefinition:
    """The dynamic table, refreshed through the Spark resource; one refresh at a time (its pool).
    `sources`: its upstream assets (see steps.lower.sources_of); `in_load_run`: it refreshes in
    the run that loads its sources (see automation.load_run_selection)."""

    lag = entry.target_lag
    described = {"lake/query": entry.query, "lake/sources": json.dumps(sources)}

    @asset(
        name=entry.name,
        deps=[AssetKey(name) for name in sources],
        description=markdown_text(entry.comment or f"dynamic table: {entry.query}"),
        group_name=DYNAMIC_TABLES_GROUP,
        kinds={"delta", "spark"},
        # With a TARGET_LAG, the lag sensor (see freshness) refreshes it; DOWNSTREAM, a refresh
        # of a table reading it.
        automation_condition=refresh_after_source_updates(entry.name) if lag is None else None,
        freshness_policy=_freshness(lag),
        tags={REFRESHES_IN_LOAD_RUN: "true"} if in_load_run and lag is None else None,
        pool=f"dynamic_table_{entry.name}",
        output_required=False,
        metadata=described | ({"lake/target_lag": lag.text} if lag else {}),
        check_specs=check_specs(entry),
    )
    def refresh_dynamic_table(
        context: AssetExecutionContext, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> Iterator[MaterializeResult[None] | AssetCheckResult]:
        lake = catalog.catalog
        trigger = _trigger(context)
        failed = _failed_upstream(context.instance, sources)
        if failed is not None and trigger != RefreshTrigger.MANUAL:
            reason = f"the latest refresh or load of {failed} failed"
            record_skipped(lake, entry.name, trigger, reason)
            context.log.warning(f"{entry.name}: SKIPPED, {reason}")
            return
        outcome = refresh(
            spark.spark_session, lake, entry.name, trigger, upstream=_reporter(context, lake)
        )
        context.log.info(outcome.summary())
        if outcome.mode is None:
            return
        refreshed = lake.get(DynamicTableEntry, entry.name)
        # The Delta version is the data version, as for every commit reported to Dagster. A
        # NO_DATA refresh materializes the same version: the table is current with its sources'
        # new versions (not "Unsynced"), and what reads it has nothing new.
        yield MaterializeResult(
            data_version=DataVersion(str(refreshed.version or 0)),
            metadata={**_metadata(outcome, refreshed), **counts_metadata(refreshed)},
        )
        yield from check_results(refreshed)

    return refresh_dynamic_table


def _freshness(lag: TargetLag | None) -> FreshnessPolicy | None:
    """Late once its last event is older than its target lag: the lag sensor reports a table that
    reflects every base table's newest version again before then (see freshness)."""
    if lag is None or lag.seconds is None:
        return None
    return FreshnessPolicy.time_window(fail_window=timedelta(seconds=lag.seconds))


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Each dynamic table as an asset, the sensor that evaluates their automation, and the one
    that runs their intervals."""
    entries = catalog.entries(DynamicTableEntry)
    sensor = automation_sensor(
        AUTOMATION_SENSOR,
        DYNAMIC_TABLES_GROUP,
        AUTOMATION_INTERVAL_SECONDS,
        {TRIGGER_TAG: RefreshTrigger.UPSTREAM.value},
    )
    # One that reads a dynamic table refreshes after it, by the automation: in a load's run,
    # Dagster would skip its step whenever that one reported nothing (suspended, skipped, failed),
    # though the run's tag would count the load as read by it.
    dynamic = {entry.name for entry in entries}
    sources = {entry.name: sources_of(entry, catalog) for entry in entries}
    lagged = [entry.name for entry in entries if entry.target_lag_seconds]
    tags = {TRIGGER_TAG: RefreshTrigger.SCHEDULED.value}
    lags = [lag_sensor(LAG_SENSOR, catalog, lagged, tags)] if lagged else []
    return Definitions(
        assets=[
            dynamic_table_asset(
                entry, sources[entry.name], not dynamic.intersection(sources[entry.name])
            )
            for entry in entries
        ],
        sensors=[*([sensor] if entries else []), *intervals_sensor(entries), *lags],
    )
