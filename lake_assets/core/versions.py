"""A point on a table's history as statements name it (a version, or the newest commit at a
time), found among its commits: where a stream starts or moves to, what a table is restored to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from lake_assets.core.delta import Commit
from lake_assets.core.errors import LakeError


@dataclass(frozen=True)
class Position:
    """A point on a source's history: a version, the newest commit at a time, or the latest."""

    version: int | None = None
    timestamp: str | None = None


LATEST = Position()


def version_at(position: Position, commits: list[Commit], source: str, newest: str) -> int:
    """The version a position names among `commits` (newest first); `newest` says how to name
    the newest version, for a time still to come."""
    latest, oldest = commits[0].version, commits[-1].version
    if position.version is not None:
        if not oldest <= position.version <= latest:
            raise LakeError(
                f"{source} has no version {position.version}",
                f"pick a version from {oldest} to {latest}",
            )
        return position.version
    if position.timestamp is None:
        return latest
    moment = naive_utc(position.timestamp)
    if moment > datetime.now(UTC).replace(tzinfo=None):
        # Every commit is before it now, and so would be those made until then: no version is.
        raise LakeError(
            f"{source} has no version at {position.timestamp}: that time is in the future",
            f"pick a time that has passed; {newest}",
        )
    for commit in commits:
        if commit.timestamp <= moment:
            return commit.version
    raise LakeError(
        f"{source} has no version at or before {position.timestamp}",
        f"pick a time from {commits[-1].timestamp.isoformat(sep=' ')} UTC on",
    )


def naive_utc(text: str) -> datetime:
    """A timestamp as commit times are kept: naive UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise LakeError(
            f"'{text}' is not a timestamp", "write it as 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC)"
        ) from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment
