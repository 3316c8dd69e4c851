"""TARGET_LAG in Dagster: one sensor that refreshes each table with a target lag once its lag (see
lags) reaches half the target, so that the refresh lands within it, and that reports a table
which reflects the newest version of every base table as materialized again (the same data
version) when its last event grows old: Dagster's freshness policy counts from the last
materialization, so a table that nothing changed under is shown fresh, as it is."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetSelection,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from lake_assets.automation import DATA_VERSION_TAG, under_way
from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import history
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS, minimum_interval
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.lags import current_lag
from lake_assets.dynamic_tables.snapshots import graph_of

# The share of its target a table's lag may reach before the sensor asks for a refresh: the
# other half is left for the run to start and the refresh to commit.
REFRESH_AT = 0.5


def _utc_now() -> datetime:
    return datetime.now(UTC)


def lag_sensor(
    name: str,
    catalog: Catalog,
    tables: list[str],
    run_tags: Mapping[str, str],
    clock: Callable[[], datetime] = _utc_now,
) -> SensorDefinition:
    """The sensor of the dynamic tables `tables` (each with a TARGET_LAG in seconds); `clock`
    is the time now (tests pass their own)."""

    @sensor(
        name=name,
        target=AssetSelection.assets(*tables),
        minimum_interval_seconds=minimum_interval(DAEMON_LOOP_SECONDS),
        default_status=DefaultSensorStatus.RUNNING,
        description="refreshes each dynamic table with a TARGET_LAG once its lag (now minus the "
        "oldest base commit it does not reflect) reaches half its target; reports one that "
        "reflects every base table's newest version as current when its last event grows old",
    )
    def keep_within_target(context: SensorEvaluationContext) -> SensorResult:
        now = clock()
        looks = [_look(context, catalog, table, now, run_tags) for table in tables]
        requests = [request for request, _ in looks if request is not None]
        said = [line for _, line in looks if line]
        for line in said:
            context.log.info(line)
        return SensorResult(
            run_requests=requests,
            skip_reason=None if requests else "; ".join(said) or "no table has a lag to keep",
        )

    return keep_within_target


def _look(
    context: SensorEvaluationContext,
    catalog: Catalog,
    table: str,
    now: datetime,
    run_tags: Mapping[str, str],
) -> tuple[RunRequest | None, str]:
    """One table's look: its refresh's request, if due, and what the sensor says of it."""
    entry = catalog.find(DynamicTableEntry, table)
    if entry is None or entry.suspended or not entry.target_lag_seconds:
        return None, ""
    target, key = entry.target_lag_seconds, AssetKey(table)
    lag = current_lag(catalog, entry, now)
    said = f"{table}: lag {lag:.0f} s of {target} s"
    busy = under_way(context.instance, key)
    if busy is not None:
        return None, f"{said}; {busy}"
    if lag >= target * REFRESH_AT:
        request = RunRequest(
            run_key=_run_key(catalog, entry), asset_selection=[key], tags=dict(run_tags)
        )
        return request, f"{said}: refresh requested"
    if lag == 0 and _last_event_age(context, key, now) >= target * REFRESH_AT:
        context.instance.report_runless_asset_event(_current(entry))
        return None, f"{said}: reflects every base table's newest version"
    return None, said


def _run_key(catalog: Catalog, entry: DynamicTableEntry) -> str:
    """One request per state of the table and its base tables: a refresh that failed is asked
    for again once a base table commits again, not on every look. A table created again (its
    versions start over, in a folder of its own) is another: Dagster keeps run keys for good."""
    bases = sorted(graph_of(catalog, entry.name).bases[entry.name])
    versions = [history(None, catalog.stored(name).location, 1)[0].version for name in bases]
    version = history(None, entry.location, 1)[0].version
    state = json.dumps([entry.location, version, bases, versions])
    return f"{entry.name}@{hashlib.sha256(state.encode()).hexdigest()[:16]}"


def _last_event_age(context: SensorEvaluationContext, key: AssetKey, now: datetime) -> float:
    """Seconds since the table's last materialization (infinite without one)."""
    event = context.instance.get_latest_materialization_event(key)
    if event is None:
        return float("inf")
    return now.timestamp() - event.timestamp


def _current(entry: DynamicTableEntry) -> AssetMaterialization:
    """The table as it is, reported again: nothing committed since its last refresh needs it."""
    version = str(entry.version or 0)
    return AssetMaterialization(
        entry.name,
        description="reflects the newest version of every base table: no refresh was needed",
        metadata={
            "lake/lag_seconds": MetadataValue.float(0.0),
            "lake/version": MetadataValue.int(entry.version or 0),
        },
        tags={DATA_VERSION_TAG: version},
    )
