"""SHOW, DESC and SHOW REFRESH HISTORY of dynamic tables: they read the catalog and Delta logs
only, no Spark."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lake_assets.core.catalog import Catalog
from lake_assets.core.results import Result
from lake_assets.dynamic_tables.choosing import replaced_views, why_full
from lake_assets.dynamic_tables.entry import DynamicTableEntry, SchedulingState
from lake_assets.dynamic_tables.explaining import explain
from lake_assets.dynamic_tables.grammar import ExplainDynamicTable, ShowRefreshHistory
from lake_assets.dynamic_tables.lags import current_lag, longest_lag
from lake_assets.dynamic_tables.refreshes import REFRESHES, RefreshMode, RefreshRecord
from lake_assets.dynamic_tables.rewrites import notes
from lake_assets.dynamic_tables.runtime.pruning import restricted
from lake_assets.dynamic_tables.snapshots import sources_of
from lake_assets.dynamic_tables.steps.lower import (
    definition_of,
    plan_of,
    query_of,
    source_columns,
)
from lake_assets.dynamic_tables.steps.read_sources import untracked
from lake_assets.sql.binding import referenced_tables
from lake_assets.sql.statements import DescribeObject
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.layout import clustered_by

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def show_dynamic_tables(session: Context) -> Result:
    catalog = session.catalog
    rows = []
    for entry in catalog.entries(DynamicTableEntry):
        last = _last(catalog, entry.name)
        rows.append(
            (
                entry.name,
                _state(entry),
                _interval_text(entry.refresh_interval_seconds),
                entry.target_lag.text if entry.target_lag else None,
                ", ".join(entry.sources),
                last.start_time if last else None,
                last.refresh_mode if last else None,
                entry.row_count,
                entry.comment,
                entry.created_at,
            )
        )
    return Result(
        [
            "name", "state", "refresh_interval", "target_lag", "sources", "last_refresh_time",
            "last_refresh_mode", "rows", "comment", "created_at",
        ],
        rows,
    )  # fmt: skip


def _last(catalog: Catalog, name: str, committed: bool = False) -> RefreshRecord | None:
    for record in REFRESHES.newest_first(catalog, name):
        if not committed or record.dt_version is not None:
            return record
    return None


def _state(entry: DynamicTableEntry) -> SchedulingState:
    return SchedulingState.SUSPENDED if entry.suspended else SchedulingState.ACTIVE


def _interval_text(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    for unit, size in (("DAY", 86400), ("HOUR", 3600), ("MINUTE", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} SECOND"


def next_mode(catalog: Catalog, entry: DynamicTableEntry) -> tuple[str, str | None]:
    """The mode the next refresh that finds changes will use, and why when it is FULL (AUTO
    decides on the changes it finds, so an AUTO table reads INCREMENTAL here)."""
    last = _last(catalog, entry.name, committed=True)
    reason = why_full(
        entry,
        plan_of(entry, catalog),
        initial=last is None,
        untracked=untracked(catalog, entry),
        views=replaced_views(catalog, entry, last.start_time if last else None),
    )
    return (RefreshMode.FULL, reason) if reason else (RefreshMode.INCREMENTAL, None)


def describe_dynamic_table(session: Context, stmt: DescribeObject) -> Result:
    catalog = session.catalog
    entry = catalog.get(DynamicTableEntry, stmt.name)
    last = _last(catalog, entry.name)
    committed = _last(catalog, entry.name, committed=True)
    mode, why = next_mode(catalog, entry)
    read = committed.source_tables if committed else {}
    now = datetime.now(UTC)
    return Result.properties(
        name=entry.name,
        query=entry.query,
        sources=", ".join(
            f"{name}@{read[name]}" if name in read else name for name in entry.sources
        ),
        base_tables=_versions(committed.base_tables) if committed else None,
        columns=", ".join(f"{c.name} {c.type}" for c in entry.columns),
        primary_key=", ".join(entry.primary_key) or None,
        expectations="; ".join(f"{e.name} {e.declaration()}" for e in entry.expectations) or None,
        last_expectations=_counts(committed.expectations) if committed else None,
        refresh_interval=_interval_text(entry.refresh_interval_seconds),
        target_lag=entry.target_lag.text if entry.target_lag else None,
        lag=f"{current_lag(catalog, entry, now):.1f} s",
        longest_lag_last_day=f"{longest_lag(catalog, entry, now):.1f} s",
        vcluster=entry.vcluster,
        state=_state(entry),
        last_refresh=(
            f"{last.start_time} {last.state} {last.refresh_mode or ''}".strip() if last else None
        ),
        declared_refresh_mode=entry.refresh_mode,
        refresh_mode=mode,
        refresh_mode_reason=why,
        notes="; ".join(notes(definition_of(entry, catalog))) or None,
        rows=entry.row_count,
        version=entry.version,
        location=entry.location,
        comment=entry.comment,
        created_at=entry.created_at,
    )


HISTORY_COLUMNS = [
    "name", "state", "refresh_mode", "refresh_trigger", "start_time", "end_time", "duration",
    "source_tables", "rows_inserted", "rows_deleted", "error_message", "reason", "base_tables",
    "lag_seconds", "expectations",
]  # fmt: skip


def show_refresh_history(session: Context, stmt: ShowRefreshHistory) -> Result:
    catalog = session.catalog
    if stmt.name is not None:
        catalog.get(DynamicTableEntry, stmt.name)
    return Result(
        HISTORY_COLUMNS,
        [
            (
                r.name, r.state, r.refresh_mode, r.refresh_trigger, r.start_time, r.end_time,
                round(r.duration, 3),
                _versions(r.source_tables), r.rows_inserted, r.rows_deleted, r.error_message,
                r.reason, _versions(r.base_tables) if r.base_tables is not None else None,
                round(r.lag_seconds, 3) if r.lag_seconds is not None else None,
                _counts(r.expectations),
            )
            for r in REFRESHES.newest_first(catalog, stmt.name)
        ],
    )  # fmt: skip


def _counts(counts: dict[str, list[int]] | None) -> str | None:
    """Each expectation's counts in a refresh, as `name: passed passed, failed failed`."""
    if not counts:
        return None
    return "; ".join(f"{name}: {p} passed, {f} failed" for name, (p, f) in sorted(counts.items()))


def _versions(versions: dict[str, int] | None) -> str | None:
    """Versions read or reflected, as `name@version`, by name."""
    if not versions:
        return None
    return ", ".join(f"{name}@{version}" for name, version in sorted(versions.items()))


def explain_dynamic_table(session: Context, stmt: ExplainDynamicTable) -> Result:
    """EXPLAIN reads the catalog and the query only: nothing runs and nothing is created."""
    catalog = session.catalog
    if stmt.create is not None:
        query = query_of(catalog, stmt.create.name, stmt.create.query.expression)
        sources = referenced_tables(query)
        columns = source_columns(catalog, sources)
        return explain(query, stmt.create.refresh_mode, columns, _layouts(catalog, sources))
    entry = catalog.get(DynamicTableEntry, stmt.name)
    read = sources_of(entry, catalog)
    columns, layouts = source_columns(catalog, read), _layouts(catalog, read)
    return explain(definition_of(entry, catalog), entry.refresh_mode, columns, layouts)


def _layouts(catalog: Catalog, sources: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The columns each source table is clustered by, of the tables large enough for a join's
    reads of them to be restricted to a change's keys."""
    relations = {name.lower(): catalog.find_relation(name) for name in sources}
    return {
        name: clustered_by(catalog, relation)
        for name, relation in relations.items()
        if isinstance(relation, TableEntry) and restricted(relation.row_count)
    }
