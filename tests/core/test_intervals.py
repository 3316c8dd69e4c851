"""An interval's k-th run is due at the object's creation plus k intervals, exactly, whatever the
interval (no minute grain); intervals the daemon cannot keep, or longer than a year, are refused."""

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.core.intervals import Interval, checked_interval

CREATED = datetime(2026, 3, 2, 12, 0, 0, 250000, tzinfo=UTC)
ANCHOR = CREATED.isoformat(timespec="milliseconds")  # as the catalog writes created_at


def test_the_kth_run_is_due_at_the_anchor_plus_k_intervals() -> None:
    for seconds in (5, 7 * 60, 90 * 60, 25 * 3600, 40 * 86400, 365 * 86400):
        interval = Interval(ANCHOR, seconds)
        for k in (1, 2, 3, 100):
            due = interval.due(k)
            assert due == CREATED + timedelta(seconds=k * seconds)
            assert interval.latest(due) == k
            assert interval.latest(due - timedelta(microseconds=1)) == k - 1


def test_uneven_intervals_keep_even_gaps() -> None:
    """7 MINUTE runs every 7 minutes from its creation, not at the minutes divisible by 7."""
    interval = Interval(ANCHOR, 7 * 60)
    dues = [interval.due(k) for k in range(1, 12)]
    assert {later - earlier for earlier, later in pairwise(dues)} == {timedelta(minutes=7)}
    assert dues[0] == datetime(2026, 3, 2, 12, 7, 0, 250000, tzinfo=UTC)


def test_nothing_is_due_before_the_first_interval_has_passed() -> None:
    interval = Interval(ANCHOR, 90 * 60)
    assert interval.latest(CREATED - timedelta(days=1)) == 0  # a clock behind the anchor
    assert interval.latest(CREATED) == 0
    assert interval.latest(CREATED + timedelta(minutes=89, seconds=59)) == 0
    assert interval.latest(CREATED + timedelta(hours=4)) == 2  # 13:30 and 15:00 passed


def test_an_interval_longer_than_any_clock_never_overflows() -> None:
    """An entry written before the bounds existed: never due, and no error."""
    endless = Interval(ANCHOR, 99999999999999 * 86400)
    assert endless.latest(CREATED + timedelta(days=9)) == 0
    assert endless.due(1) == datetime.max.replace(tzinfo=UTC)


def test_the_bounds_are_the_daemons_loop_and_a_year() -> None:
    assert checked_interval("x", 5, "low", "high") == 5
    assert checked_interval("x", 365 * 86400, "low", "high") == 365 * 86400
    with pytest.raises(LakeError) as short:
        checked_interval("REFRESH INTERVAL 4 SECOND", 4, "5 SECOND", "365 DAY")
    assert str(short.value) == (
        "REFRESH INTERVAL 4 SECOND is shorter than 5 seconds — the Dagster daemon looks for due "
        "runs every 5 s: write 5 SECOND or longer"
    )
    with pytest.raises(LakeError) as long:
        checked_interval("REFRESH INTERVAL 366 DAY", 366 * 86400, "5 SECOND", "365 DAY")
    assert (
        str(long.value)
        == "REFRESH INTERVAL 366 DAY is longer than 365 days — write 365 DAY or shorter"
    )
