"""CREATE [OR REPLACE] DYNAMIC TABLE, REFRESH, ALTER … SUSPEND|RESUME|SET/DROP PRIMARY KEY and the
refresh history; SHOW, DESC and DROP take the forms every kind shares."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import TokenType, exp

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.intervals import LONGEST_DAYS, SHORTEST_SECONDS, checked_interval
from lake_assets.core.names import HIDDEN_PREFIX
from lake_assets.dynamic_tables.entry import DOWNSTREAM, RefreshModeChoice, TargetLag
from lake_assets.sql.grammar import Grammar, ObjectWords, StatementParser, finished
from lake_assets.sql.statements import Query, Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.tables.expectations import Expectation, parse_expectation
from lake_assets.tables.grammar import (
    Alteration,
    AlterTablePrimaryKey,
    accept_alteration,
    key_alterations,
)

CREATE_DYNAMIC_TABLE = (
    "CREATE [OR REPLACE] DYNAMIC TABLE [IF NOT EXISTS] name "
    "[(col [COMMENT '…'], …, CONSTRAINT name EXPECT (…) [ON VIOLATION …], …)] "
    "[REFRESH INTERVAL n SECOND|MINUTE|HOUR|DAY | TARGET_LAG = '<n> seconds|minutes|hours|days' "
    "| TARGET_LAG = DOWNSTREAM] [REFRESH_MODE = AUTO|INCREMENTAL|FULL] "
    "[VCLUSTER vc] [COMMENT '…'] AS SELECT …"
)
EXPLAIN_DYNAMIC_TABLE = "EXPLAIN DYNAMIC TABLE name | EXPLAIN CREATE DYNAMIC TABLE … AS SELECT …"
SHOW_REFRESH_HISTORY = "SHOW DYNAMIC TABLE REFRESH HISTORY [WHERE name = '…']"
ALTER_DYNAMIC_TABLE = (
    "ALTER DYNAMIC TABLE name SUSPEND | RESUME | SET PRIMARY KEY (col, …) | DROP PRIMARY KEY | "
    "SET TARGET_LAG = '<n> minutes' | DOWNSTREAM"
)
_UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}
# The shortest TARGET_LAG: Dagster's freshness policies take no window under a minute.
_SHORTEST_LAG = 60
WORDS = ObjectWords("dynamic table", (("DYNAMIC", "TABLE"),))


@dataclass(frozen=True)
class CreateDynamicTable(Statement):
    """`CREATE [OR REPLACE] DYNAMIC TABLE … AS SELECT …`; `columns` rename the query's outputs."""

    name: str
    query: Query
    query_text: str
    columns: tuple[Column, ...] = ()
    refresh_interval_seconds: int | None = None
    vcluster: str | None = None
    comment: str | None = None
    or_replace: bool = False
    if_not_exists: bool = False
    refresh_mode: RefreshModeChoice = RefreshModeChoice.AUTO
    target_lag: TargetLag | None = None
    # Checked against the query's columns by CREATE (tables.expectations.declared_expectations).
    expectations: tuple[Expectation, ...] = ()


@dataclass(frozen=True)
class RefreshDynamicTable(Statement):
    name: str


@dataclass(frozen=True)
class ExplainDynamicTable(Statement):
    """How a dynamic table refreshes: an existing one, or one a CREATE would make (it makes
    nothing)."""

    name: str
    create: CreateDynamicTable | None = None


@dataclass(frozen=True)
class ShowRefreshHistory(Statement):
    """`SHOW DYNAMIC TABLE REFRESH HISTORY [WHERE name = '…']`."""

    name: str | None = None


@dataclass(frozen=True)
class AlterDynamicTable(Statement):
    name: str
    suspended: bool


@dataclass(frozen=True)
class AlterTargetLag(Statement):
    """`ALTER DYNAMIC TABLE d SET TARGET_LAG = …`."""

    name: str
    target_lag: TargetLag


@dataclass(frozen=True)
class AlterDynamicTablePrimaryKey(AlterTablePrimaryKey):
    """`ALTER DYNAMIC TABLE d SET PRIMARY KEY (col, …)`; DROP PRIMARY KEY is the empty key."""


def parse_create_dynamic_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    """The options in any order, then AS and the query."""
    cursor.usage = CREATE_DYNAMIC_TABLE
    cursor.expect("CREATE")
    or_replace = cursor.accept("OR", "REPLACE")
    cursor.expect("DYNAMIC", "TABLE")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    if or_replace and if_not_exists:
        raise LakeError("OR REPLACE and IF NOT EXISTS cannot be used together", "keep one of them")
    name = cursor.name("a dynamic table name")
    columns, expectations = (
        _column_list(cursor) if cursor.accept_symbol(TokenType.L_PAREN) else ([], [])
    )
    interval = vcluster = comment = lag = None
    mode = RefreshModeChoice.AUTO
    while not cursor.accept("AS"):
        if cursor.accept("REFRESH", "INTERVAL"):
            interval = _interval(cursor)
        elif cursor.accept("TARGET_LAG"):
            lag = target_lag(cursor)
        elif cursor.accept("REFRESH_MODE"):
            mode = _refresh_mode(cursor)
        elif cursor.accept("VCLUSTER"):
            vcluster = cursor.identifier("a virtual cluster name")
        elif cursor.accept("COMMENT"):
            comment = cursor.string("a comment")
        else:
            cursor.fail("REFRESH INTERVAL, TARGET_LAG, REFRESH_MODE, VCLUSTER, COMMENT or AS")
    if interval is not None and lag is not None:
        raise LakeError(
            f"dynamic table {name} gives both REFRESH INTERVAL and TARGET_LAG",
            "keep one: TARGET_LAG refreshes as often as the lag needs, REFRESH INTERVAL on a clock",
        )
    query, text = grammar.query_after(cursor, f"dynamic table {name}", CREATE_DYNAMIC_TABLE)
    refuse_hidden_names(name, query.expression)
    refuse_time_travel(name, query.expression)
    names = [column.name.lower() for column in columns]
    if len(set(names)) != len(names):
        raise LakeError(
            f"a column name appears twice in dynamic table {name}",
            "give every column a distinct name",
        )
    return CreateDynamicTable(
        name, query, text, tuple(columns), interval, vcluster, comment, or_replace, if_not_exists,
        mode, lag, tuple(expectations),
    )  # fmt: skip


def refuse_hidden_names(name: str, query: exp.Expr) -> None:
    """A refresh wraps the query in columns, aliases and lambda variables of its own, all named
    with the hidden prefix: a name of the query's with that prefix could be taken for one."""
    for identifier in query.find_all(exp.Identifier):
        if identifier.name.lower().startswith(HIDDEN_PREFIX):
            raise LakeError(
                f"the query of dynamic table {name} names {identifier.name}: names starting "
                f"with {HIDDEN_PREFIX} are the lakehouse's own",
                "pick another alias; a source column so named cannot be read by a dynamic "
                "table: copy its table with the column renamed",
            )


def refuse_time_travel(name: str, query: exp.Expr) -> None:
    """A refresh reads each source at its newest version; a source read as of a fixed version
    or time would never change, and so has no place in a dynamic table, in any refresh mode."""
    travel = query.find(exp.Version)
    if travel is None:
        return
    table = travel.parent.name if isinstance(travel.parent, exp.Table) else "a source"
    words = f"{travel.name.upper()} AS OF"
    raise LakeError(
        f"dynamic table {name} reads {table} {words} …: a dynamic table reads its sources' "
        "current versions, and a fixed version never changes",
        f"query the past version with SELECT … FROM {table} {words} …, or copy it once into a "
        f"table with INSERT INTO … SELECT … FROM {table} {words} …",
    )


def _column_list(cursor: TokenCursor) -> tuple[list[Column], list[Expectation]]:
    """After '(': `col [COMMENT '…'], …` and `CONSTRAINT name EXPECT (…) …`, in any order, then
    ')'; the types come from the query."""
    columns, expectations = [], []
    while True:
        if cursor.accept("CONSTRAINT"):
            expectations.append(parse_expectation(cursor))
        else:
            column = cursor.identifier("a column name or CONSTRAINT")
            comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
            columns.append(Column(column, "", comment))
        if not cursor.accept_symbol(TokenType.COMMA):
            break
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return columns, expectations


def _refresh_mode(cursor: TokenCursor) -> RefreshModeChoice:
    cursor.expect_symbol(TokenType.EQ, "=")
    word = cursor.word()
    if word not in RefreshModeChoice.__members__:
        cursor.fail("AUTO, INCREMENTAL or FULL")
    cursor.position += 1
    return RefreshModeChoice(word)


def _interval(cursor: TokenCursor) -> int:
    amount = cursor.integer("a whole number after REFRESH INTERVAL")
    unit = cursor.word().removesuffix("S")
    if unit not in _UNIT_SECONDS:
        cursor.fail("SECOND, MINUTE, HOUR or DAY")
    cursor.position += 1
    return checked_interval(
        f"REFRESH INTERVAL {amount} {unit}",
        amount * _UNIT_SECONDS[unit],
        shortest=f"REFRESH INTERVAL {SHORTEST_SECONDS} SECOND",
        longest=f"REFRESH INTERVAL {LONGEST_DAYS} DAY",
    )


def target_lag(cursor: TokenCursor) -> TargetLag:
    """After TARGET_LAG: `= '<n> seconds|minutes|hours|days'` or `= DOWNSTREAM`."""
    cursor.expect_symbol(TokenType.EQ, "=")
    if cursor.accept("DOWNSTREAM"):
        return DOWNSTREAM
    text = cursor.string("a lag such as '5 minutes', or DOWNSTREAM")
    words = text.split()
    unit = words[-1].upper().removesuffix("S") if len(words) == 2 else ""
    if unit not in _UNIT_SECONDS or not words[0].isdigit():
        raise LakeError(
            f"TARGET_LAG '{text}' is not a lag",
            "write a whole number and a unit, e.g. TARGET_LAG = '5 minutes', or DOWNSTREAM",
        )
    seconds = int(words[0]) * _UNIT_SECONDS[unit]
    if seconds < _SHORTEST_LAG:
        raise LakeError(
            f"TARGET_LAG '{text}' is shorter than 1 minute",
            "Dagster's freshness policy, which shows the table fresh or late, counts from a "
            "minute: write TARGET_LAG = '1 minute' or longer",
        )
    return TargetLag(
        checked_interval(
            f"TARGET_LAG '{text}'",
            seconds,
            shortest=f"TARGET_LAG = '{SHORTEST_SECONDS} seconds'",
            longest=f"TARGET_LAG = '{LONGEST_DAYS} days'",
        )
    )


def parse_refresh(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = "REFRESH DYNAMIC TABLE name"
    cursor.expect("REFRESH", "DYNAMIC", "TABLE")
    return finished(cursor, RefreshDynamicTable(cursor.name("a dynamic table name")))


def parse_alter(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = ALTER_DYNAMIC_TABLE
    cursor.expect("ALTER", "DYNAMIC", "TABLE")
    name = cursor.name("a dynamic table name")
    statement = accept_alteration(cursor, name, _ALTERATIONS)
    if statement is None:
        cursor.fail("RESUME, SUSPEND, SET PRIMARY KEY, DROP PRIMARY KEY or SET TARGET_LAG")
    return statement


_ALTERATIONS: dict[tuple[str, ...], Alteration] = {
    ("SUSPEND",): lambda cursor, name: AlterDynamicTable(name, suspended=True),
    ("RESUME",): lambda cursor, name: AlterDynamicTable(name, suspended=False),
    ("SET", "TARGET_LAG"): lambda cursor, name: AlterTargetLag(name, target_lag(cursor)),
    **key_alterations(AlterDynamicTablePrimaryKey, "dynamic table"),
}


def parse_explain(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = EXPLAIN_DYNAMIC_TABLE
    cursor.expect("EXPLAIN")
    if cursor.word() == "CREATE":
        create = parse_create_dynamic_table(cursor, grammar)
        assert isinstance(create, CreateDynamicTable)
        return ExplainDynamicTable(create.name, create)
    cursor.expect("DYNAMIC", "TABLE")
    return finished(cursor, ExplainDynamicTable(cursor.name("a dynamic table name")))


def parse_refresh_history(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = SHOW_REFRESH_HISTORY
    cursor.expect("SHOW", "DYNAMIC", "TABLE", "REFRESH", "HISTORY")
    name = None
    if cursor.accept("WHERE"):
        cursor.expect("NAME")
        cursor.expect_symbol(TokenType.EQ, "=")
        name = cursor.string("a quoted dynamic table name").lower()
    return finished(cursor, ShowRefreshHistory(name))


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "DYNAMIC", "TABLE"): parse_create_dynamic_table,
    ("CREATE", "OR", "REPLACE", "DYNAMIC", "TABLE"): parse_create_dynamic_table,
    ("REFRESH", "DYNAMIC", "TABLE"): parse_refresh,
    ("ALTER", "DYNAMIC", "TABLE"): parse_alter,
    ("SHOW", "DYNAMIC", "TABLE", "REFRESH", "HISTORY"): parse_refresh_history,
    ("EXPLAIN", "DYNAMIC", "TABLE"): parse_explain,
    ("EXPLAIN", "CREATE", "DYNAMIC", "TABLE"): parse_explain,
    ("EXPLAIN", "CREATE", "OR", "REPLACE", "DYNAMIC", "TABLE"): parse_explain,
}
