"""CREATE [OR REPLACE] VIEW; SHOW, DESC and DROP take the forms every kind shares (`SHOW VIEWS`,
`DESC VIEW v`, `DROP VIEW [IF EXISTS] v`)."""

from __future__ import annotations

from dataclasses import dataclass

from lake_assets.core.errors import LakeError
from lake_assets.sql.grammar import Grammar, ObjectWords, StatementParser
from lake_assets.sql.statements import Query, Statement
from lake_assets.sql.tokens import TokenCursor

CREATE_VIEW = "CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name [COMMENT '…'] AS SELECT …"
WORDS = ObjectWords("view", (("VIEW",),))


@dataclass(frozen=True)
class CreateView(Statement):
    """`CREATE [OR REPLACE] VIEW … AS SELECT …`; `query_text` is kept as written."""

    name: str
    query: Query
    query_text: str
    comment: str | None = None
    or_replace: bool = False
    if_not_exists: bool = False


def parse_create_view(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_VIEW
    cursor.expect("CREATE")
    or_replace = cursor.accept("OR", "REPLACE")
    cursor.expect("VIEW")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    if or_replace and if_not_exists:
        raise LakeError("OR REPLACE and IF NOT EXISTS cannot be used together", "keep one of them")
    name = cursor.name("a view name")
    comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
    cursor.expect("AS")
    query, text = grammar.query_after(cursor, f"view {name}", CREATE_VIEW)
    if query.sources:
        raise LakeError(
            f"view {name} can read only tables, dynamic tables and views",
            "load the files into a table (COPY INTO or a pipe) and read that table",
        )
    return CreateView(name, query, text, comment, or_replace, if_not_exists)


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "VIEW"): parse_create_view,
    ("CREATE", "OR", "REPLACE", "VIEW"): parse_create_view,
}
