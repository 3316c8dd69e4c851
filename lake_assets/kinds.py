"""The object kinds, in the direction data flows. Adding a kind is one package and one line here."""

from __future__ import annotations

from lake_assets import connections, dynamic_tables, pipes, tables, volumes
from lake_assets.core.kind import Kind
from lake_assets.sql.grammar import Grammar
from lake_assets.sql.statements import Statement

KINDS: tuple[Kind, ...] = (
    connections.KIND,
    volumes.KIND,
    pipes.KIND,
    tables.KIND,
    dynamic_tables.KIND,
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
