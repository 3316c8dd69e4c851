"""The seed's dynamic table DDL: CREATE, REFRESH, DROP, SHOW, DESC and ALTER … SUSPEND|RESUME."""

from __future__ import annotations

from sqlglot.tokens import TokenType

from lake_assets.sql.ingest_ddl import QueryParser
from lake_assets.sql.statements import (
    AlterDynamicTable,
    CreateDynamicTable,
    DescribeDynamicTable,
    DropDynamicTable,
    Query,
    RefreshDynamicTable,
    ShowDynamicTables,
    ShowRefreshHistory,
    Statement,
)
from lake_assets.sql.tokens import TokenCursor
from resources.catalog import Column
from resources.errors import LakeError

CREATE_DYNAMIC_TABLE = (
    "CREATE [OR REPLACE] DYNAMIC TABLE [IF NOT EXISTS] name [(col [COMMENT '…'], …)] "
    "[REFRESH INTERVAL n SECOND|MINUTE|HOUR|DAY] [VCLUSTER vc] [COMMENT '…'] AS SELECT …"
)
SHOW_REFRESH_HISTORY = "SHOW DYNAMIC TABLE REFRESH HISTORY [WHERE name = '…']"
_UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def parse_create_dynamic_table(
    cursor: TokenCursor, text: str, parse_query: QueryParser, or_replace: bool
) -> CreateDynamicTable:
    """After CREATE [OR REPLACE] DYNAMIC TABLE: the options in any order, then AS and the query."""
    cursor.usage = CREATE_DYNAMIC_TABLE
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    if or_replace and if_not_exists:
        raise LakeError("OR REPLACE and IF NOT EXISTS cannot be used together", "keep one of them")
    name = cursor.name("a dynamic table name")
    columns: list[Column] = []
    if cursor.accept_symbol(TokenType.L_PAREN):
        while True:
            column = cursor.identifier("a column name")
            comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
            columns.append(Column(column, "", comment))
            if not cursor.accept_symbol(TokenType.COMMA):
                break
        cursor.expect_symbol(TokenType.R_PAREN, ")")
    interval = vcluster = comment = None
    while not cursor.accept("AS"):
        if cursor.accept("REFRESH", "INTERVAL"):
            interval = _interval(cursor)
        elif cursor.accept("VCLUSTER"):
            vcluster = cursor.identifier("a virtual cluster name")
        elif cursor.accept("COMMENT"):
            comment = cursor.string("a comment")
        else:
            cursor.fail("REFRESH INTERVAL, VCLUSTER, COMMENT or AS")
    start = cursor.peek()
    if start is None:
        cursor.fail("SELECT …")
    query = parse_query(text[start.start :])
    if not isinstance(query, Query):
        raise LakeError(
            f"dynamic table {name} must be defined by a SELECT",
            f"write it as {CREATE_DYNAMIC_TABLE}",
        )
    names = [column.name.lower() for column in columns]
    if len(set(names)) != len(names):
        raise LakeError(
            f"a column name appears twice in dynamic table {name}",
            "give every column a distinct name",
        )
    return CreateDynamicTable(
        name,
        query,
        text[start.start :].strip(),
        tuple(columns),
        interval,
        vcluster,
        comment,
        or_replace,
        if_not_exists,
    )


def _interval(cursor: TokenCursor) -> int:
    amount = cursor.integer("a whole number after REFRESH INTERVAL")
    unit = cursor.word().removesuffix("S")
    if unit not in _UNIT_SECONDS:
        cursor.fail("SECOND, MINUTE, HOUR or DAY")
    cursor.position += 1
    if amount < 1:
        raise LakeError("REFRESH INTERVAL must be at least 1", "write e.g. REFRESH INTERVAL 1 HOUR")
    return amount * _UNIT_SECONDS[unit]


def parse_dynamic_table_statement(cursor: TokenCursor, verb: str) -> Statement:
    """REFRESH / DROP / DESC / ALTER / SHOW after `… DYNAMIC TABLE[S]` has been read."""
    cursor.usage = f"{verb} DYNAMIC TABLE name"
    if verb == "SHOW":
        return _show(cursor)
    if verb == "DROP":
        cursor.usage = "DROP DYNAMIC TABLE [IF EXISTS] name"
        if_exists = cursor.accept("IF", "EXISTS")
        statement: Statement = DropDynamicTable(cursor.name("a dynamic table name"), if_exists)
    elif verb == "ALTER":
        cursor.usage = "ALTER DYNAMIC TABLE name SUSPEND|RESUME"
        name = cursor.name("a dynamic table name")
        if cursor.accept("SUSPEND"):
            statement = AlterDynamicTable(name, suspended=True)
        else:
            cursor.expect("RESUME")
            statement = AlterDynamicTable(name, suspended=False)
    elif verb == "REFRESH":
        statement = RefreshDynamicTable(cursor.name("a dynamic table name"))
    else:
        statement = DescribeDynamicTable(cursor.name("a dynamic table name"))
    cursor.expect_end()
    return statement


def _show(cursor: TokenCursor) -> Statement:
    """After SHOW DYNAMIC: `TABLES` or `TABLE REFRESH HISTORY [WHERE name = '…']`."""
    cursor.usage = f"SHOW DYNAMIC TABLES | {SHOW_REFRESH_HISTORY}"
    if cursor.accept("TABLES"):
        cursor.expect_end()
        return ShowDynamicTables()
    cursor.expect("TABLE", "REFRESH", "HISTORY")
    cursor.usage = SHOW_REFRESH_HISTORY
    name = None
    if cursor.accept("WHERE"):
        cursor.expect("NAME")
        cursor.expect_symbol(TokenType.EQ, "=")
        name = cursor.string("a quoted dynamic table name").lower()
    cursor.expect_end()
    return ShowRefreshHistory(name)
