"""What the kinds whose assets run by Dagster's automation conditions share (dynamic tables,
tasks): the sensor that evaluates one kind's conditions, an interval as a cron, the data
versions that say when an asset changed, and the load's run that refreshes its readers."""

from dagster import (
    AssetKey,
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
)

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


# An asset that refreshes in the run that loads its source carries this tag (value "true"); a
# load's run (its job tagged LOAD_RUN_TAG, the table's name) takes its table's direct readers
# that carry it, and tags itself with each one's `refreshed_in_load_run` before it reports the
# table, so that their automation counts the load as read by that refresh.
REFRESHES_IN_LOAD_RUN = "lake/refreshes_in_load_run"
LOAD_RUN_TAG = "lake/load_run"


def load_run_selection(table: str) -> AssetSelection:
    """The table and the assets that refresh in its load's run."""
    loaded = AssetSelection.assets(table)
    readers = loaded.downstream(depth=1, include_self=False)
    return loaded | (readers & AssetSelection.tag(REFRESHES_IN_LOAD_RUN, "true"))


def refreshed_in_load_run(key: AssetKey) -> str:
    """The run tag of a load's run that refreshes `key` after the load (see above)."""
    return f"lake/refreshed_in_load_run.{key.to_user_string()}"
