"""The object kinds, in the direction data flows. Adding a kind is one package and one line here."""

from __future__ import annotations

from lake_assets.connections import kind as connections
from lake_assets.core.kind import Kind
from lake_assets.dynamic_tables import kind as dynamic_tables
from lake_assets.exports import kind as exports
from lake_assets.pipes import kind as pipes
from lake_assets.sql.grammar import Grammar
from lake_assets.sql.statements import Statement
from lake_assets.streams import kind as streams
from lake_assets.tables import kind as tables
from lake_assets.tasks import kind as tasks
from lake_assets.views import kind as views
from lake_assets.volumes import kind as volumes

KINDS: tuple[Kind, ...] = (
    connections.KIND,
    volumes.KIND,
    pipes.KIND,
    tables.KIND,
    streams.KIND,
    views.KIND,
    dynamic_tables.KIND,
    tasks.KIND,
    exports.KIND,
)

GRAMMAR = Grammar.of(
    (kind.statements for kind in KINDS),
    (kind.sources for kind in KINDS),
    (kind.words for kind in KINDS if kind.words is not None),
)
BY_NAME = {kind.name: kind for kind in KINDS}


def parse_statement(text: str) -> Statement:
    return GRAMMAR.parse(text)


def parse_script(text: str) -> list[Statement]:
    return GRAMMAR.parse_script(text)
