"""The check every write to a catalog table starts with: the table's Delta log still holds, intact,
every commit from the version the catalog last recorded for it. Delta itself commits the next
version on top of a newest commit that does not parse, and once newest commits are deleted it
reuses their version numbers: readers and stream offsets that saw them would be wrong in silence.

DML and DataFrame saves (commit_write), file and Kafka loads, dynamic-table refreshes and
changelog exports call it before they read the log to write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from lake_assets.core.delta import log_actions, log_versions
from lake_assets.core.entries import StoredRelation
from lake_assets.core.errors import LakeError

T = TypeVar("T")


def ensure_log_intact(relation: StoredRelation) -> None:
    """Refuse, in one line naming the table and the version, to write `relation` when its log ends
    before the version the catalog recorded, or a commit from that version on is missing or does
    not parse. Cheap: one listing and the commit files since the recorded version (each write
    records its own, so usually one or two). Older commits may be gone (log cleanup expires them)
    and newer ones unrecorded (a crash after a commit): both are fine."""
    try:
        versions = log_versions(relation.location)
    except FileNotFoundError:  # the whole log folder is gone
        versions = []
    if versions is None:
        return  # a store only Spark reads: Delta's own checks stand
    seen, what = relation.version, f"{relation.LABEL} {relation.name}"
    if not versions:
        if seen is not None:
            raise _behind(relation, what, "has no commits", 0, seen)
        return
    newest = versions[0]
    if seen is not None and newest < seen:
        raise _behind(relation, what, f"ends at version {newest}", newest + 1, seen)
    present = set(versions)
    for version in range(max(newest if seen is None else seen, versions[-1]), newest + 1):
        if version not in present:
            raise LakeError(
                f"{what}'s log lacks version {version} (its newest is {newest}): a commit is "
                "missing",
                f"restore {_commit_file(relation, version)} from a backup before writing "
                f"{relation.name} again",
            )
        if not _parses(relation.location, version):
            raise LakeError(
                f"{what}'s commit at version {version} is damaged: it does not parse",
                f"restore {_commit_file(relation, version)} from a backup before reading or "
                f"writing {relation.name} again",
            )


def _behind(relation: StoredRelation, what: str, ends: str, first: int, seen: int) -> LakeError:
    """The log lost its newest commits: a write now would reuse their version numbers."""
    files = _commit_file(relation, first)
    if first < seen:
        files += f" to {seen:020d}.json"
    return LakeError(
        f"{what}'s log {ends} but version {seen} was committed: its newest commits are missing",
        f"restore {files} from a backup; without one, drop {what} and create it again (the rows "
        "its log still holds can be read first)",
    )


def _commit_file(relation: StoredRelation, version: int) -> str:
    return f"{relation.location.rstrip('/')}/_delta_log/{version:020d}.json"


def _parses(location: str, version: int) -> bool:
    """Whether a commit file is there and is JSON lines, one action object a line."""
    try:
        actions = log_actions(location, version)
    except ValueError:  # not JSON, or not UTF-8
        return False
    return actions is not None and actions != [] and all(isinstance(a, dict) for a in actions)


def newest_unrecorded(
    location: str, since: int | None, pick: Callable[[dict[str, Any]], T | None]
) -> tuple[int, T] | None:
    """What `pick` finds in an action of the newest commit after version `since` (the catalog's
    recorded version) that has one, with that commit's version; read without Spark. Such
    commits are left by a crash between a commit and the catalog's record: usually none."""
    if since is None:
        return None
    try:
        versions = log_versions(location) or []
    except FileNotFoundError:
        return None
    for version in versions:  # newest first
        if version <= since:
            return None
        for action in log_actions(location, version) or []:
            found = pick(action)
            if found is not None:
                return version, found
    return None
