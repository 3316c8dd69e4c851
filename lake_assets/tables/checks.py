"""A table's expectations as Dagster asset checks of its asset, evaluated on each commit from
the counts its record carries: a check shown passing had no violation in that write (WARN is
shown with severity WARN when violated, DROP ROW failed with the rows it dropped; a FAIL never
commits a violation)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    MetadataValue,
    multi_asset_check,
)

from lake_assets.core.delta import history
from lake_assets.core.entries import StoredRelation
from lake_assets.tables.enforcing import COUNTS, recorded_counts
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Expectation, Expecting, Violation


def check_specs(entry: Expecting) -> list[AssetCheckSpec]:
    return [
        AssetCheckSpec(
            e.name,
            asset=entry.name,
            description=f"{e.declaration()}: passes when the table's last write (a dynamic "
            "table's: its last refresh) had no row failing it",
        )
        for e in entry.expectations
    ]


def expectations_check(entry: TableEntry) -> AssetChecksDefinition:
    """The table's expectation checks; run by hand, they show its newest write's counts."""

    @multi_asset_check(specs=check_specs(entry), name=f"{entry.name}_expectations")
    def judged() -> Iterator[AssetCheckResult]:
        newest = history(None, entry.location, 1)[0].version
        yield from check_results(replace(entry, version=newest))

    return judged


def check_results(entry: Expecting) -> Iterator[AssetCheckResult]:
    """The checks' results on the table's commit at `entry.version` (no counts: nothing judged,
    each passes)."""
    found = recorded_counts(entry.location, entry.version) if entry.version is not None else None
    for expectation, passed, failed in _verdicts(entry, found or {}):
        yield AssetCheckResult(
            asset_key=entry.name,
            check_name=expectation.name,
            passed=failed == 0,
            severity=_severity(expectation),
            metadata=_metadata(passed, failed),
        )


def evaluations(entry: StoredRelation) -> list[AssetCheckEvaluation]:
    """The checks evaluated on the table's newest commit (none when it judged no rows)."""
    if not isinstance(entry, Expecting) or entry.version is None:
        return []
    found = recorded_counts(entry.location, entry.version)
    if found is None:
        return []
    return [
        AssetCheckEvaluation(
            asset_key=AssetKey(entry.name),
            check_name=expectation.name,
            passed=failed == 0,
            severity=_severity(expectation),
            metadata=_metadata(passed, failed),
        )
        for expectation, passed, failed in _verdicts(entry, found)
    ]


def counts_metadata(entry: StoredRelation) -> dict[str, MetadataValue]:
    """The materialization's record of each expectation's counts in its commit."""
    if not isinstance(entry, Expecting) or entry.version is None:
        return {}
    found = recorded_counts(entry.location, entry.version)
    return {} if found is None else {f"lake/{COUNTS}": MetadataValue.json(found)}


def _verdicts(
    entry: Expecting, counts: dict[str, list[int]]
) -> Iterator[tuple[Expectation, int, int]]:
    """Each expectation's counts (none judged: an expectation added since, or no write yet)."""
    for expectation in entry.expectations:
        passed, failed = counts.get(expectation.name, (0, 0))
        yield expectation, passed, failed


def _severity(expectation: Expectation) -> AssetCheckSeverity:
    if expectation.on_violation == Violation.WARN:
        return AssetCheckSeverity.WARN
    return AssetCheckSeverity.ERROR


def _metadata(passed: int, failed: int) -> dict[str, MetadataValue]:
    return {"passed": MetadataValue.int(passed), "failed": MetadataValue.int(failed)}
