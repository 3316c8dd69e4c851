"""How often a sensor ticks under Dagster's daemon, which looks at sensors every 5 s: what each
kind says of its sensors (DESC PIPE, CREATE's message) and what the UI shows come from here."""

import math

# The daemon's loop: a sensor ticks at most once per loop, on a whole number of loops.
DAEMON_LOOP_SECONDS = 5


def tick_period(seconds: int) -> int:
    """The period a sensor asking for `seconds` gets: rounded up to whole loops."""
    return max(1, math.ceil(seconds / DAEMON_LOOP_SECONDS)) * DAEMON_LOOP_SECONDS


def minimum_interval(seconds: int) -> int:
    """The interval to declare for a tick every `tick_period(seconds)`: one second under it, as
    a look that comes a hair before the period ends skips a whole loop (5 s, then 10 s, …)."""
    return tick_period(seconds) - 1
