"""Changelog exports → assets partitioned by UTC day, downstream of the table they read: a
partition exports its day (EXPORT CHANGELOG … DATE => it), the day just ended exports itself
after midnight, and a backfill exports a range of days, one run per day."""

from datetime import UTC, datetime, timedelta

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    DailyPartitionsDefinition,
    Definitions,
    MaterializeResult,
    MetadataValue,
    asset,
)

from lake_assets.automation import AUTOMATION_INTERVAL_SECONDS, automation_sensor
from lake_assets.changes import dagster_reporter
from lake_assets.core.catalog import Catalog
from lake_assets.core.kind import Sessions
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.exports.entry import ExportEntry
from lake_assets.exports.grammar import TimeRange
from lake_assets.exports.kind import EXPORTS_SENSOR
from lake_assets.exports.records import OpType
from lake_assets.exports.run import Outcome, exporting
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

EXPORTS_GROUP = "changelog_exports"
# Runs the exports sensor requests carry this tag; a run without it was started by hand.
TRIGGER_TAG = "lake/export_trigger"
AUTOMATIC = "AUTOMATIC"
MIDNIGHT = "0 0 * * *"
# The op types records carry (DO is never produced).
OPS = (OpType.UPDATE, OpType.DELETE_ALL_VERSIONS, OpType.DELETE_ROW)

# Today's partition exists (end_offset=1), so that the UI can export the day so far as EXPORT
# CHANGELOG can; the automation exports the partition before it, the day that just ended, once
# per midnight tick (a partial export of that day made before then is completed). Unlike
# on_cron, it does not wait for the source to change after midnight: the day's commits are in.
DAY_JUST_ENDED = (
    AutomationCondition.in_latest_time_window(timedelta(days=2))
    & ~AutomationCondition.in_latest_time_window()
    # Dagster types since_last_handled's self too narrowly for a cron tick (a false alarm).
    & AutomationCondition.cron_tick_passed(MIDNIGHT, "UTC").since_last_handled()  # type: ignore[misc, operator]
    & ~AutomationCondition.in_progress()
).with_label("the day just ended, after midnight UTC")


def export_key(name: str) -> AssetKey:
    return AssetKey(["export", name])


def first_day(catalog: Catalog, entry: ExportEntry) -> str:
    """The UTC day (YYYY-MM-DD) the source was created, before which it has no changes."""
    source = catalog.find_relation(entry.source)
    created = source.created_at if source is not None else entry.created_at
    return datetime.fromisoformat(created).astimezone(UTC).strftime("%Y-%m-%d")


def day_range(partition_key: str) -> TimeRange:
    """A partition key (YYYY-MM-DD) as EXPORT CHANGELOG's DATE."""
    return TimeRange.of_day(partition_key.replace("-", ""))


def export_metadata(outcome: Outcome) -> dict[str, MetadataValue]:
    """Records by op type and the versions covered, as numbers the UI plots; an up-to-date
    range read nothing and wrote nothing."""
    counts = {op.value: outcome.records.get(op.value, 0) for op in OPS}
    metadata: dict[str, MetadataValue] = {
        "lake/range": MetadataValue.text(outcome.window.label),
        "up_to_date": MetadataValue.bool(outcome.span is None),
        "records": MetadataValue.int(sum(counts.values())),
        **{f"records_{op}": MetadataValue.int(count) for op, count in counts.items()},
    }
    if outcome.span is not None:
        span = outcome.span
        metadata.update(
            first_version=MetadataValue.int(span.first_version),
            last_version=MetadataValue.int(span.last_version),
            versions_read=MetadataValue.int(span.versions_read),
            commits=MetadataValue.int(len(span.commits)),
            complete=MetadataValue.bool(span.complete),
        )
    return metadata


def export_asset(entry: ExportEntry, start: str, sessions: Sessions) -> AssetsDefinition:
    """The export, a day per partition from `start`, run through the Spark resource; its pool
    keeps two of its runs (a backfill's days) from overlapping. A LakeError fails the run."""
    kinds = {"spark", "delta"} if entry.to_table is not None else {"spark", entry.file_format}

    @asset(
        key=export_key(entry.name),
        deps=[AssetKey(entry.source)],
        description=markdown_text(
            entry.comment or f"changelog export of {entry.source} to {entry.target}"
        ),
        group_name=EXPORTS_GROUP,
        kinds={kind.lower() for kind in kinds},
        partitions_def=DailyPartitionsDefinition(start_date=start, timezone="UTC", end_offset=1),
        automation_condition=DAY_JUST_ENDED,
        pool=f"export_{entry.name}",
        metadata={"lake/source": entry.source, "lake/target": entry.target},
    )
    def export(
        context: AssetExecutionContext, spark: DeltaSparkResource, catalog: CatalogResource
    ) -> MaterializeResult:
        lake = catalog.catalog
        session = sessions(
            lake, catalog.settings, lambda: spark.spark_session, changed=dagster_reporter(lake)
        )
        outcome = exporting(session, entry.name, day_range(context.partition_key))
        metadata = export_metadata(outcome)
        context.log.info(
            f"changelog export {entry.name}, {outcome.window.label}: "
            + ("up to date" if outcome.span is None else f"{metadata['records'].value} records")
        )
        trigger = context.run.tags.get(TRIGGER_TAG, "MANUAL")
        return MaterializeResult(metadata={**metadata, "lake/trigger": MetadataValue.text(trigger)})

    return export


def build_defs(catalog: Catalog, settings: LakeSettings, sessions: Sessions) -> Definitions:
    """Each changelog export as a daily-partitioned asset, and the sensor of their automation."""
    entries = catalog.entries(ExportEntry)
    sensor = automation_sensor(
        EXPORTS_SENSOR, EXPORTS_GROUP, AUTOMATION_INTERVAL_SECONDS, {TRIGGER_TAG: AUTOMATIC}
    )
    return Definitions(
        assets=[export_asset(entry, first_day(catalog, entry), sessions) for entry in entries],
        sensors=[sensor] if entries else [],
    )
