"""The streams kind as registered in lake_assets.kinds: its SQL and handlers."""

from lake_assets.core.kind import Kind
from lake_assets.streams import engine
from lake_assets.streams.consumption import CONSUMPTION
from lake_assets.streams.grammar import STATEMENTS, WORDS, AlterStreamOffset, CreateStream

# The kind's own Dagster sensors.
STREAMS_SENSOR = "lake_streams"

KIND = Kind(
    name="stream",
    statements=STATEMENTS,
    handlers={
        CreateStream: engine.create_stream,
        AlterStreamOffset: engine.alter_offset,
    },
    words=WORDS,
    show=engine.show_streams,
    describe=engine.describe_stream,
    drop=engine.drop_stream,
    defs="lake_assets.streams.defs",
    sensors=(STREAMS_SENSOR,),
    consumption=CONSUMPTION,
)
