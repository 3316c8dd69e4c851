"""The changelog exports kind as registered in lake_assets.kinds: its SQL and handlers."""

from lake_assets.core.kind import Kind
from lake_assets.exports import engine, run
from lake_assets.exports.grammar import STATEMENTS, WORDS, CreateExport, ExportChangelog

# The kind's own Dagster sensors.
EXPORTS_SENSOR = "lake_exports"

KIND = Kind(
    name="export",
    statements=STATEMENTS,
    handlers={
        CreateExport: engine.create_export,
        ExportChangelog: run.export_changelog,
    },
    words=WORDS,
    show=engine.show_exports,
    describe=engine.describe_export,
    drop=engine.drop_export,
    defs="lake_assets.exports.defs",
    sensors=(EXPORTS_SENSOR,),
)
