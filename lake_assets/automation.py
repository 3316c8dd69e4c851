"""What the kinds whose assets run by Dagster's automation conditions share (dynamic tables,
tasks): the sensor that evaluates one kind's conditions, and an interval as a cron."""

from dagster import AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus

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
        minimum_interval_seconds=interval_seconds,
        run_tags=run_tags,
        default_status=DefaultSensorStatus.RUNNING,
    )
