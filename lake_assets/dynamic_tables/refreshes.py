"""Dynamic tables' refresh history: each refresh's record rides in its commit (or, for a refresh
that committed nothing, is recorded alone) and is indexed here for SHOW REFRESH HISTORY."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa

from lake_assets.core.commits import decode
from lake_assets.core.database import TEXT, owned_table
from lake_assets.core.delta import Commit, row_changes
from lake_assets.core.entries import RELATION
from lake_assets.core.errors import LakeError
from lake_assets.core.history import History
from lake_assets.tables.enforcing import COUNTS

# The first key of a refresh commit's record.
REFRESH_MARKER = "lake_refresh"


class RefreshState(StrEnum):
    """How a dynamic table's refresh ended."""

    SUCCEED = "SUCCEED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class RefreshMode(StrEnum):
    INCREMENTAL = "INCREMENTAL"
    FULL = "FULL"
    NO_DATA = "NO_DATA"


class RefreshTrigger(StrEnum):
    """Who asked for a refresh: its creation, a person, its interval, a source's change, or a
    refresh of a table reading it (which first brings it to the base versions it reads)."""

    CREATION = "CREATION"
    MANUAL = "MANUAL"
    SCHEDULED = "SCHEDULED"
    UPSTREAM = "UPSTREAM"
    DOWNSTREAM = "DOWNSTREAM"


class RefreshRaced(LakeError):
    """Another refresh committed since this one planned (of the table, or of one it reads, to
    newer versions than its snapshot): it wrote nothing, and planning again starts from there."""


@dataclass(frozen=True)
class Read:
    """A table a refresh read (a source, or a stage's hidden table), and the version it read."""

    location: str
    version: int

    def of(self, location: str) -> int | None:
        """The version read, if the table read is the one at `location` (not one replaced)."""
        return self.version if self.location == location else None


@dataclass
class RefreshCommit:
    """The record a refresh's commit carries (its userMetadata): the versions it read, from
    which the next refresh starts, the versions of the base tables it reflects through them
    (`bases`: the tables under the dynamic tables it reads, see snapshots), and what it did.
    Filled in as the refresh decides."""

    trigger: RefreshTrigger
    start: str
    sources: dict[str, Read]
    tag: str = field(default_factory=lambda: uuid.uuid4().hex)
    mode: RefreshMode | None = None
    reason: str | None = None
    # Set when every row was replaced: how many the table held before.
    replaced_rows: int | None = None
    stages: dict[str, Read] = field(default_factory=dict)
    bases: dict[str, Read] = field(default_factory=dict)
    # When the oldest base commit it brings in was made (ISO, UTC): its commit's lag is counted
    # from there (see lags).
    behind_since: str | None = None
    # Each expectation's [passed, failed] over the rows its commit adds (see expected).
    expectations: dict[str, list[int]] = field(default_factory=dict)

    @property
    def versions(self) -> dict[str, int]:
        return {name: read.version for name, read in self.sources.items()}

    def to_json(self) -> dict[str, object]:
        """The commit's userMetadata: keys of fields not set are left out."""
        record: dict[str, object] = {
            REFRESH_MARKER: 1,
            "tag": self.tag,
            "trigger": str(self.trigger),
            "start": self.start,
            "sources": _reads_json(self.sources),
        }
        optional = {
            "mode": self.mode,
            "reason": self.reason,
            "replaced_rows": self.replaced_rows,
            "behind_since": self.behind_since,
        }
        record.update({key: value for key, value in optional.items() if value is not None})
        if self.stages:
            record["stages"] = _reads_json(self.stages)
        if self.bases:
            record["bases"] = _reads_json(self.bases)
        if self.expectations:
            record[COUNTS] = self.expectations
        return record

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> RefreshCommit:
        mode, reason, replaced = (
            record.get("mode"),
            record.get("reason"),
            record.get("replaced_rows"),
        )
        return cls(
            RefreshTrigger(str(record["trigger"])),
            str(record["start"]),
            _reads(record["sources"]),
            str(record["tag"]),
            RefreshMode(str(mode)) if mode else None,
            str(reason) if reason is not None else None,
            int(str(replaced)) if replaced is not None else None,
            _reads(record.get("stages", {})),
            _reads(record.get("bases", {})),
            str(since) if (since := record.get("behind_since")) is not None else None,
            _counts(record.get(COUNTS, {})),
        )


def _counts(record: object) -> dict[str, list[int]]:
    assert isinstance(record, dict), "a refresh record's counts are an object"
    return {str(name): [int(n) for n in counts] for name, counts in record.items()}


def _reads_json(reads: dict[str, Read]) -> dict[str, list[str | int]]:
    return {name: [read.location, read.version] for name, read in reads.items()}


def _reads(record: object) -> dict[str, Read]:
    """Reads as a record keeps them: name → [location, version]."""
    assert isinstance(record, dict), "a refresh record's reads are an object"
    return {str(name): Read(str(read[0]), int(read[1])) for name, read in record.items()}


@dataclass(frozen=True)
class RefreshRecord:
    """One refresh of a dynamic table: SUCCEED, FAILED or SKIPPED, and what it read and wrote."""

    id: str
    name: str
    state: RefreshState
    refresh_mode: RefreshMode | None
    refresh_trigger: RefreshTrigger
    start_time: str
    end_time: str
    duration: float
    source_tables: dict[str, int]
    rows_inserted: int | None = None
    rows_deleted: int | None = None
    error_message: str | None = None
    reason: str | None = None
    dt_version: int | None = None
    # The base tables' versions it reflects (name → version), when it succeeded.
    base_tables: dict[str, int] | None = None
    # How far behind its base tables the table had fallen when this refresh's commit caught it up
    # (from the oldest base commit it brought in; see lags).
    lag_seconds: float | None = None
    # Each expectation's [passed, failed] in its commit (see expected).
    expectations: dict[str, list[int]] | None = None


def committed(name: str, commit: Commit, record: RefreshCommit | None = None) -> RefreshRecord:
    """The history row of a refresh commit, from what the commit itself carries (`record`: its
    record, when already decoded)."""
    if record is None:
        decoded = decode(commit.user_metadata, REFRESH_MARKER)
        assert decoded is not None, "a refresh's commit carries its record"
        record = RefreshCommit.from_json(decoded)
    inserted, updated, deleted = row_changes(commit.operation or "", commit.operation_metrics) or (
        0, 0, 0,
    )  # fmt: skip
    if record.replaced_rows is not None:  # every row was replaced (see writing.write_rows)
        deleted = record.replaced_rows
    else:
        inserted, deleted = inserted + updated, deleted + updated
    end = commit.timestamp
    started = datetime.fromisoformat(record.start)
    duration = (end.replace(tzinfo=started.tzinfo) - started).total_seconds()
    assert record.mode is not None, "a committed refresh has a mode"
    behind = datetime.fromisoformat(record.behind_since) if record.behind_since else None
    lag = (end.replace(tzinfo=behind.tzinfo) - behind).total_seconds() if behind else 0.0
    return RefreshRecord(
        record.tag, name, RefreshState.SUCCEED, record.mode, record.trigger, record.start,
        end.isoformat(timespec="milliseconds"), max(duration, 0.0), record.versions, inserted,
        deleted, None, record.reason, commit.version,
        {name: read.version for name, read in record.bases.items()}, max(lag, 0.0),
        record.expectations or None,
    )  # fmt: skip


REFRESHES = History(
    owned_table(
        "refresh_history",
        (RELATION, "name"),
        sa.Column("id", TEXT, primary_key=True),
        sa.Column("name", TEXT, nullable=False),
        sa.Column("state", TEXT, nullable=False),
        sa.Column("refresh_mode", TEXT),
        sa.Column("refresh_trigger", TEXT, nullable=False),
        sa.Column("start_time", TEXT, nullable=False),
        sa.Column("end_time", TEXT, nullable=False),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("source_tables", TEXT, nullable=False),
        sa.Column("rows_inserted", sa.BigInteger),
        sa.Column("rows_deleted", sa.BigInteger),
        sa.Column("error_message", TEXT),
        sa.Column("reason", TEXT),
        sa.Column("dt_version", sa.BigInteger),
        sa.Column("base_tables", TEXT),
        sa.Column("lag_seconds", sa.Float),
        sa.Column("expectations", TEXT),
        sa.Index("refresh_history_by_name", "name", "start_time"),
    ),
    RefreshRecord,
    newest=("start_time",),
)
