"""The pipes kind as registered in lake_assets.kinds: its SQL, handlers and definitions."""

from lake_assets.core.kind import Kind
from lake_assets.pipes import engine
from lake_assets.pipes.copy_grammar import CopyIntoTable
from lake_assets.pipes.grammar import (
    SOURCES,
    STATEMENTS,
    WORDS,
    AlterPipe,
    CreatePipe,
    LoadHistorySource,
    RejectedRowsSource,
)
from lake_assets.pipes.history import read_load_history, read_rejected_rows
from lake_assets.pipes.kafka.grammar import KafkaErrorsSource, KafkaSource
from lake_assets.pipes.kafka.reading import read_kafka, read_kafka_errors

KIND = Kind(
    name="pipe",
    statements=STATEMENTS,
    handlers={
        CopyIntoTable: engine.copy_into_table,
        CreatePipe: engine.create_pipe,
        AlterPipe: engine.alter_pipe,
    },
    sources=SOURCES,
    readers={
        LoadHistorySource: read_load_history,
        RejectedRowsSource: read_rejected_rows,
        KafkaSource: read_kafka,
        KafkaErrorsSource: read_kafka_errors,
    },
    words=WORDS,
    show=engine.show_pipes,
    describe=engine.describe_pipe,
    drop=engine.drop_pipe,
    defs="lake_assets.pipes.defs",
)
