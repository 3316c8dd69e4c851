"""An interval's runs (REFRESH INTERVAL, a task's `SCHEDULE = 'n MINUTE'`): the k-th is due at
the object's creation plus k intervals, exactly; and the bounds an interval must keep. No Dagster:
the grammars check the bounds, `automation.interval_sensor` requests the runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lake_assets.core.errors import LakeError
from lake_assets.core.ticks import DAEMON_LOOP_SECONDS

# The daemon looks for due runs once a loop, so it cannot keep a shorter interval.
SHORTEST_SECONDS = DAEMON_LOOP_SECONDS
LONGEST_DAYS = 365
LONGEST_SECONDS = LONGEST_DAYS * 86400
_MICROSECOND = timedelta(microseconds=1)


def checked_interval(written: str, seconds: int, shortest: str, longest: str) -> int:
    """`seconds`, or the refusal of an interval the daemon cannot keep or longer than a year;
    `shortest` and `longest` are the bounds as the statement would write them."""
    if seconds < SHORTEST_SECONDS:
        raise LakeError(
            f"{written} is shorter than {SHORTEST_SECONDS} seconds",
            f"the Dagster daemon looks for due runs every {DAEMON_LOOP_SECONDS} s: "
            f"write {shortest} or longer",
        )
    if seconds > LONGEST_SECONDS:
        raise LakeError(
            f"{written} is longer than {LONGEST_DAYS} days", f"write {longest} or shorter"
        )
    return seconds


@dataclass(frozen=True)
class Interval:
    """Runs every `seconds` from `anchor` (the object's `created_at`, ISO text): the k-th
    (k ≥ 1) is due at anchor + k · seconds."""

    anchor: str
    seconds: int

    def due(self, k: int) -> datetime:
        """The k-th due time; past year 9999 (only an interval stored before CREATE checked the
        bounds reaches it) the last time a datetime holds, as such a run never comes."""
        try:
            return datetime.fromisoformat(self.anchor) + k * timedelta(seconds=self.seconds)
        except OverflowError:
            return datetime.max.replace(tzinfo=UTC)

    def latest(self, now: datetime) -> int:
        """The k of the latest run due at `now`, 0 before the first; counted in whole
        microseconds, so that no interval, however long, overflows."""
        elapsed = (now - datetime.fromisoformat(self.anchor)) // _MICROSECOND
        return max(0, elapsed // (self.seconds * 1_000_000))
