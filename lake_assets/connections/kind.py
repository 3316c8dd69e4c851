"""The connections kind as registered in lake_assets.kinds: its SQL, handlers and definitions."""

from lake_assets.connections.engine import create_connection, describe_connection, show_connections
from lake_assets.connections.entry import ConnectionEntry
from lake_assets.connections.grammar import STATEMENTS, WORDS, CreateConnection
from lake_assets.core.kind import Kind
from lake_assets.core.lifecycle import drop_object

KIND = Kind(
    name="connection",
    statements=STATEMENTS,
    handlers={CreateConnection: create_connection},
    words=WORDS,
    show=show_connections,
    describe=describe_connection,
    drop=drop_object(ConnectionEntry),
)
