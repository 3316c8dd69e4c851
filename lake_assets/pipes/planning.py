"""Which files a load acts on: the pending ones, and the loaded ones that changed since (skipped,
each change recorded once); and which loaded files PURGE may delete."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import now_utc
from lake_assets.pipes.load_records import (
    LoadRecord,
    LoadStatus,
    file_record,
    load_history,
    record_loads,
)
from resources.storage import FileInfo

# Files modified this recently may still be being written; they wait for the next look.
SETTLE_SECONDS = 1.0

# What COPY, a pipe's run and DESC PIPE say of loaded files that changed and were skipped.
CHANGED_SINCE_LOADED = "changed since loaded (RELOAD_CHANGED = TRUE loads them again)"


@dataclass(frozen=True)
class ChangedFile:
    """A loaded file whose size or modification time changed since its newest load."""

    info: FileInfo
    last_load: LoadRecord
    recorded: bool  # this change already has its SKIPPED_CHANGED record


@dataclass(frozen=True)
class LoadPlan:
    """What a load does with the files it sees: loads `pending`, and skips `changed` (loaded
    files that changed since, unless RELOAD_CHANGED or FORCE), recording each change once."""

    pending: list[FileInfo]
    changed: list[ChangedFile]

    @property
    def news(self) -> list[FileInfo]:
        """What a run has to act on: files to load and changes not recorded yet (a sensor asks
        for a run for these only, so a skipped change is recorded once, not at every look)."""
        return self.pending + [c.info for c in self.changed if not c.recorded]


def plan_files(
    catalog: Catalog,
    table: str,
    files: list[FileInfo],
    retention_days: float,
    *,
    force: bool = False,
    reload_changed: bool = False,
    complete: bool = False,
) -> LoadPlan:
    """Pending: files not loaded within the retention window, not failed as they are, and
    settled (or known `complete`: S3 announces an object only once it is whole). A loaded file
    whose size or modification time changed since its newest load is pending only with
    `reload_changed`; else it is a skipped change."""
    now = datetime.now(UTC)
    since = (now - timedelta(days=retention_days)).isoformat(timespec="milliseconds")
    records = load_history(catalog, table, since)
    newest_loads: dict[str, LoadRecord] = {}
    for record in records:  # newest first
        if record.status.loaded:
            newest_loads.setdefault(record.file_path, record)
    failed, skipped = (
        {(r.file_path, r.file_size, r.file_modified) for r in records if r.status == status}
        for status in (LoadStatus.LOAD_FAILED, LoadStatus.SKIPPED_CHANGED)
    )
    settled = now - timedelta(seconds=0 if complete else SETTLE_SECONDS)
    plan = LoadPlan([], [])
    for info in files:
        if info.last_modified > settled:
            continue
        if force:
            plan.pending.append(info)
            continue
        state = (info.url, info.size, info.last_modified.isoformat())
        last = newest_loads.get(info.url)
        loaded_as_is = last is not None and (last.file_size, last.file_modified) == state[1:]
        if loaded_as_is or state in failed:
            continue
        if last is None or reload_changed:
            plan.pending.append(info)
        else:
            plan.changed.append(ChangedFile(info, last, state in skipped))
    return plan


def skip_changed(
    catalog: Catalog, table: str, changed: list[ChangedFile], pipe: str | None
) -> list[LoadRecord]:
    """A SKIPPED_CHANGED record for each skipped change; only the unrecorded ones are added to
    the load history (no rows, no commit: as a failed file's record)."""
    now = now_utc()
    skips = [
        (c, file_record(c.info, now, LoadStatus.SKIPPED_CHANGED, 0, changed_text(c), pipe, None))
        for c in changed
    ]
    record_loads(catalog, table, [record for c, record in skips if not c.recorded], None)
    return [record for _, record in skips]


def changed_text(changed: ChangedFile) -> str:
    """Why a loaded file was skipped, and the two ways to load it."""
    last = changed.last_load
    return (
        f"changed since it was loaded at {last.last_copy_time} ({last.file_size} bytes then, "
        f"{changed.info.size} now), so not loaded again; COPY with RELOAD_CHANGED = TRUE "
        "appends its new content, FORCE = TRUE appends every file again"
    )


def loaded_files(
    catalog: Catalog, table: str, files: list[FileInfo], retention_days: float
) -> list[FileInfo]:
    """Files whose rows are committed, unchanged since: the only ones PURGE may delete."""
    since = (datetime.now(UTC) - timedelta(days=retention_days)).isoformat(timespec="milliseconds")
    loaded = {
        (r.file_path, r.file_size, r.file_modified)
        for r in load_history(catalog, table, since)
        if r.status.loaded
    }
    return [i for i in files if (i.url, i.size, i.last_modified.isoformat()) in loaded]
