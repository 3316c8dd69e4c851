"""What the kinds whose assets run by Dagster's automation conditions share (dynamic tables,
tasks): the sensor that evaluates one kind's conditions, an interval as a cron, and the data
versions that say when an asset changed."""

from dagster import AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus

from lake_assets.core.ticks import minimum_interval

# The tag Dagster reads an event's data version from (a table's Delta version, a volume's listing
# digest): what reads the asset is stale only when it moves.
DATA_VERSION_TAG = "dagster/data_version"

# How often the daemon evaluates automation conditions (Dagster's default is 30 s).
AUTOMATION_INTERVAL_SECONDS = 5


def refresh_cron(seconds: int) -> str:
    """An interval as cron; cron's grain is a minute, so shorter intervals tick each minute."""
    minutes = max(1, seconds // 60)
    if minutes < 60:
        return "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    hours = minutes // 60
    if hours < 24:
        return f"0 */{hours} * * *"
    return f"0 0 */{hours // 24} * *"


def automation_sensor(
    name: str, group: str, interval_seconds: int, run_tags: dict[str, str]
) -> AutomationConditionSensorDefinition:
    """One sensor per kind, running from the start, so its assets run by themselves; the tags on
    the runs it requests tell a run it was not started by hand."""
    return AutomationConditionSensorDefinition(
        name,
        target=AssetSelection.groups(group),
        minimum_interval_seconds=minimum_interval(interval_seconds),
        run_tags=run_tags,
        default_status=DefaultSensorStatus.RUNNING,
    )
