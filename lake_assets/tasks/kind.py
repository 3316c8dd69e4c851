"""The tasks kind as registered in lake_assets.kinds: its SQL, handlers and definitions."""

from lake_assets.core.kind import Kind
from lake_assets.tasks import engine
from lake_assets.tasks.grammar import (
    STATEMENTS,
    WORDS,
    AlterTask,
    CreateTask,
    ExecuteTask,
    ShowTaskHistory,
)

# The kind's own Dagster sensors.
TASKS_SENSOR = "lake_tasks"
INTERVALS_SENSOR = "lake_task_intervals"

KIND = Kind(
    name="task",
    statements=STATEMENTS,
    handlers={
        CreateTask: engine.create_task,
        AlterTask: engine.alter_task,
        ExecuteTask: engine.execute_task,
        ShowTaskHistory: engine.show_task_history,
    },
    words=WORDS,
    show=engine.show_tasks,
    describe=engine.describe_task,
    drop=engine.drop_task,
    defs="lake_assets.tasks.defs",
    sensors=(TASKS_SENSOR, INTERVALS_SENSOR),
)
