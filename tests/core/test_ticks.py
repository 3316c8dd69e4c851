"""A sensor ticks on whole loops of Dagster's daemon; it declares a second under its period."""

from lake_assets.core.ticks import minimum_interval, tick_period


def test_a_sensor_ticks_on_whole_daemon_loops_and_declares_a_second_under() -> None:
    assert [tick_period(s) for s in (1, 2, 5, 6, 10, 30, 60)] == [5, 5, 5, 10, 10, 30, 60]
    assert [minimum_interval(s) for s in (2, 5, 7, 30)] == [4, 4, 9, 29]
