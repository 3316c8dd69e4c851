"""Names the lakehouse gives to what users never see (hidden columns, temporary views,
placeholders) all start with one prefix, which user column names may not start with."""

from __future__ import annotations

HIDDEN_PREFIX = "__lake_"


def hidden(name: str) -> str:
    """The hidden name for `name`."""
    return HIDDEN_PREFIX + name


# The project's own sensors: a pipe (a sensor of its own name) may not take these names.
VOLUMES_SENSOR = "lake_volumes"
AUTOMATION_SENSOR = "lake_automation"
STREAMS_SENSOR = "lake_streams"
TASKS_SENSOR = "lake_tasks"
DIRECTORIES_SENSOR = "lake_directories"
EXPORTS_SENSOR = "lake_exports"
RESERVED_SENSORS = (
    VOLUMES_SENSOR,
    AUTOMATION_SENSOR,
    STREAMS_SENSOR,
    TASKS_SENSOR,
    DIRECTORIES_SENSOR,
    EXPORTS_SENSOR,
)
