"""What a table's ingestion did (`Loads`) and the checks its run reports: no file failed, no
Kafka message set aside, and the table's expectations on the rows it loaded."""

from collections.abc import Iterator
from dataclasses import dataclass, field

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, MetadataValue

from lake_assets.core.rendering import markdown_text
from lake_assets.pipes.entry import PipeEntry, PipeKind
from lake_assets.pipes.kafka.batches import BatchOutcome
from lake_assets.pipes.load_records import LoadRecord, LoadStatus
from lake_assets.pipes.loading import LoadOutcome
from lake_assets.tables.checks import check_results, check_specs
from lake_assets.tables.entry import TableEntry

FILES_CHECK = "files_load"
MESSAGES_CHECK = "messages_load"


@dataclass
class Loads:
    """What one run of a table's ingestion did: files its volume pipes loaded, and batches its
    Kafka pipes committed."""

    files: list[LoadOutcome] = field(default_factory=list)
    batches: list[BatchOutcome] = field(default_factory=list)


def load_checks(table: TableEntry, pipes: list[PipeEntry]) -> list[AssetCheckSpec]:
    """No file failed to load (volume pipes); no message was set aside as bad (Kafka pipes);
    the table's expectations (tables.checks), as its loads commit."""
    kinds = {pipe.pipe_kind for pipe in pipes}
    checks = []
    if PipeKind.VOLUME in kinds:
        checks.append(
            AssetCheckSpec(
                FILES_CHECK,
                asset=table.name,
                description="passes when every file a load read was loaded whole; warns when "
                "records were rejected (ON_ERROR: see rejected_rows), errs when a file failed: it "
                "is named with its error, stays in its volume and is loaded again only once it "
                "changes",
            )
        )
    if PipeKind.KAFKA in kinds:
        checks.append(
            AssetCheckSpec(
                MESSAGES_CHECK,
                asset=table.name,
                description="passes when a load set no Kafka message aside; SELECT * FROM "
                "kafka_errors('<pipe>') shows those it did, with their errors",
            )
        )
    return checks + check_specs(table)


def with_status(loads: Loads, status: LoadStatus) -> list[LoadRecord]:
    return [r for o in loads.files for r in o.records if r.status == status]


def failure_text(failed: list[LoadRecord]) -> str:
    """What a load with failed files says first: how many, that they stay, and the first error."""
    first = failed[0]
    return (
        f"{len(failed)} file(s) failed to load and stay in the volume, not loaded again until "
        f"they change; first: {first.file_path}: {first.first_error_message}"
    )


def load_check_results(
    current: TableEntry, loads: Loads, names: set[str]
) -> Iterator[AssetCheckResult]:
    """The load checks' results, and the table's expectations' on its newest commit."""
    table = current.name
    failed = with_status(loads, LoadStatus.LOAD_FAILED)
    rejected = sum(o.rejected for o in loads.files)
    if FILES_CHECK in names:
        yield AssetCheckResult(
            asset_key=table,
            check_name=FILES_CHECK,
            passed=not failed and not rejected,
            # Rejected records are what ON_ERROR asked for: a warning, where a failed file errs.
            severity=AssetCheckSeverity.ERROR if failed else AssetCheckSeverity.WARN,
            description=_files_text(table, failed, rejected),
            metadata={
                "failed_files": MetadataValue.md(
                    "\n".join(
                        f"- {markdown_text(f'{r.file_path}: {r.first_error_message}')}"
                        for r in failed
                    )
                    or "none"
                ),
                "rows_rejected": rejected,
            },
        )
    if MESSAGES_CHECK in names:
        bad = sum(b.batch.bad or 0 for b in loads.batches)
        yield AssetCheckResult(
            asset_key=table,
            check_name=MESSAGES_CHECK,
            passed=not bad,
            metadata={
                "bad_messages": bad,
                "see": MetadataValue.md(
                    "\n".join(f"- `SELECT * FROM kafka_errors('{b.pipe}')`" for b in loads.batches)
                    or "none"
                ),
            },
        )
    yield from (result for result in check_results(current) if result.check_name in names)


def _files_text(table: str, failed: list[LoadRecord], rejected: int) -> str:
    parts = [markdown_text(failure_text(failed))] if failed else []
    if rejected:
        parts.append(f"{rejected} row(s) rejected: `SELECT * FROM rejected_rows('{table}')`")
    return "; ".join(parts) or "no file failed to load and no row was rejected"
