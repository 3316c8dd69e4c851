"""The dynamic tables kind as registered in lake_assets.kinds: its SQL, handlers and definitions."""

from lake_assets.core.kind import Kind
from lake_assets.dynamic_tables import describing, engine, targets
from lake_assets.dynamic_tables.grammar import (
    STATEMENTS,
    WORDS,
    AlterDynamicTable,
    AlterDynamicTablePrimaryKey,
    AlterTargetLag,
    CreateDynamicTable,
    ExplainDynamicTable,
    RefreshDynamicTable,
    ShowRefreshHistory,
)

# The kind's own Dagster sensors.
AUTOMATION_SENSOR = "lake_automation"
INTERVALS_SENSOR = "lake_refresh_intervals"
LAG_SENSOR = "lake_target_lags"

KIND = Kind(
    name="dynamic table",
    statements=STATEMENTS,
    handlers={
        CreateDynamicTable: engine.create_dynamic_table,
        RefreshDynamicTable: engine.refresh_dynamic_table,
        AlterDynamicTable: engine.alter_dynamic_table,
        AlterDynamicTablePrimaryKey: engine.alter_primary_key,
        AlterTargetLag: targets.alter_target_lag,
        ShowRefreshHistory: describing.show_refresh_history,
        ExplainDynamicTable: describing.explain_dynamic_table,
    },
    words=WORDS,
    show=describing.show_dynamic_tables,
    describe=describing.describe_dynamic_table,
    drop=engine.drop_dynamic_table,
    defs="lake_assets.dynamic_tables.defs",
    sensors=(AUTOMATION_SENSOR, INTERVALS_SENSOR, LAG_SENSOR),
)
