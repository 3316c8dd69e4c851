"""CREATE / DROP / ALTER TABLE, OPTIMIZE, DESC [TABLE], DESC HISTORY and SHOW TABLES."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import TokenType

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.versions import Position
from lake_assets.sql.grammar import (
    Grammar,
    SourceParser,
    StatementParser,
    finished,
    unsupported,
)
from lake_assets.sql.relations import table_relation
from lake_assets.sql.statements import Dml, Query, Source, Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.tables.alterations import ALTERATIONS, parse_column
from lake_assets.tables.entry import (
    CLUSTERING,
    PRIMARY_KEY,
    ColumnList,
    clustering_columns,
    declared_key,
)
from lake_assets.tables.expectations import (
    EXPECTATION,
    Expectation,
    declared_expectations,
    parse_expectation,
)

CREATE_TABLE = (
    "CREATE TABLE [IF NOT EXISTS] name (col TYPE [PRIMARY KEY] [COMMENT '…'], … "
    f"[, PRIMARY KEY (col, …)] [, {EXPECTATION}, …]) [CLUSTER BY (col, …)] [COMMENT '…']"
)
CREATE_TABLE_AS = "CREATE TABLE [IF NOT EXISTS] name [COMMENT '…'] AS SELECT …"
DROP_TABLE = "DROP TABLE [IF EXISTS] name"
ALTER_TABLE = (
    "ALTER TABLE name SET PROPERTIES ('change_tracking' = 'true') | SET PRIMARY KEY (col, …) "
    "| DROP PRIMARY KEY | CLUSTER BY (col, …) | CLUSTER BY NONE | ADD [COLUMN] col TYPE "
    "[COMMENT '…'] | RENAME COLUMN col TO new | DROP COLUMN col | ALTER [COLUMN] col [SET DATA] "
    f"TYPE type | RENAME TO new_name | ADD {EXPECTATION} | DROP CONSTRAINT name"
)
TRUNCATE_TABLE = "TRUNCATE [TABLE] name"
RESTORE_TABLE = "RESTORE [TABLE] name TO VERSION [AS OF] n | TO TIMESTAMP [AS OF] '…'"
OPTIMIZE = "OPTIMIZE name [FULL]"
DESCRIBE = "DESC [TABLE] name | DESC HISTORY name"
# Delta clusters a table's files by 4 columns at most.
MOST_CLUSTERING_COLUMNS = 4


@dataclass(frozen=True)
class CreateTable(Statement):
    name: str
    columns: tuple[Column, ...]
    comment: str | None = None
    if_not_exists: bool = False
    primary_key: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    expectations: tuple[Expectation, ...] = ()


@dataclass(frozen=True)
class CreateTableAs(Statement):
    """`CREATE TABLE t AS SELECT …`: the table with the query's columns and rows, one commit."""

    name: str
    query: Query
    comment: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropTable(Statement):
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class AlterTableProperties(Statement):
    name: str
    properties: dict[str, str]


@dataclass(frozen=True)
class AlterTablePrimaryKey(Statement):
    """`ALTER TABLE t SET PRIMARY KEY (col, …)`; DROP PRIMARY KEY is the empty key."""

    name: str
    primary_key: tuple[str, ...]


@dataclass(frozen=True)
class AlterTableClustering(Statement):
    """`ALTER TABLE t CLUSTER BY (col, …)`; CLUSTER BY NONE is no columns."""

    name: str
    cluster_by: tuple[str, ...]


@dataclass(frozen=True)
class AddExpectation(Statement):
    """`ALTER TABLE t ADD CONSTRAINT name EXPECT (…)`: judges the writes from then on."""

    name: str
    expectation: Expectation


@dataclass(frozen=True)
class DropExpectation(Statement):
    """`ALTER TABLE t DROP CONSTRAINT name`."""

    name: str
    expectation: str


@dataclass(frozen=True)
class RestoreTable(Statement):
    """`RESTORE TABLE t TO VERSION n | TIMESTAMP '…'`: the table's rows (and columns) as then."""

    name: str
    to: Position


@dataclass(frozen=True)
class Optimize(Statement):
    """`OPTIMIZE t`; FULL lays out again the files clustered by earlier clustering columns too."""

    name: str
    full: bool = False


# What follows `ALTER <kind> name`: the statement it makes, given the cursor and the name.
Alteration = Callable[[TokenCursor, str], Statement]


@dataclass(frozen=True)
class DescribeTable(Statement):
    name: str


@dataclass(frozen=True)
class DescribeHistory(Statement):
    name: str


@dataclass(frozen=True)
class ShowTables(Statement):
    pass


@dataclass(frozen=True)
class QuarantinedRowsSource(Source):
    """`quarantined_rows('t')`: the rows writes to t dropped by its DROP ROW expectations."""

    table: str


def parse_create_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_TABLE
    cursor.expect("CREATE", "TABLE")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a table name")
    if cursor.word() in ("AS", "COMMENT"):
        return _create_table_as(cursor, grammar, name, if_not_exists)
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    columns: list[Column] = []
    keys: list[tuple[str, ...]] = []
    expectations: list[Expectation] = []
    while True:
        if cursor.accept(PRIMARY_KEY.clause):
            keys.append(primary_key_columns(cursor, f"table {name}"))
        elif cursor.accept("CONSTRAINT"):
            expectations.append(parse_expectation(cursor))
        else:
            column, keyed = parse_column(cursor)
            columns.append(column)
            if keyed:
                keys.append((column.name,))
        if not cursor.accept_symbol(TokenType.COMMA):
            break
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    comment, clustered = None, None
    for _ in range(2):  # CLUSTER BY and COMMENT, in either order
        if comment is None and cursor.accept("COMMENT"):
            comment = cursor.string("a comment")
        elif clustered is None and cursor.accept(CLUSTERING.clause):
            clustered = cluster_columns(cursor, f"table {name}")
    cursor.expect_end()
    names = [column.name.lower() for column in columns]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise LakeError(
            f"column {duplicates[0]} appears twice in table {name}",
            "give every column a distinct name",
        )
    if len(keys) > 1:
        raise LakeError(
            f"PRIMARY KEY is given twice in table {name}",
            "declare the key once: PRIMARY KEY (col, …) with all its columns",
        )
    key = declared_key(f"table {name}", columns, keys[0]) if keys else ()
    cluster_by = clustering_columns(f"table {name}", columns, clustered or ())
    expected = declared_expectations(f"table {name}", columns, expectations)
    return CreateTable(name, tuple(columns), comment, if_not_exists, key, cluster_by, expected)


def _create_table_as(
    cursor: TokenCursor, grammar: Grammar, name: str, if_not_exists: bool
) -> Statement:
    cursor.usage = CREATE_TABLE_AS
    comment = cursor.string("a comment") if cursor.accept("COMMENT") else None
    cursor.expect("AS")
    query, _ = grammar.query_after(cursor, f"table {name}", CREATE_TABLE_AS)
    return CreateTableAs(name, query, comment, if_not_exists)


def primary_key_columns(cursor: TokenCursor, what: str) -> tuple[str, ...]:
    """`(col, …)` after PRIMARY KEY, each once; `declared_key` checks them against the columns."""
    return _column_list(cursor, PRIMARY_KEY, what)


def cluster_columns(cursor: TokenCursor, what: str) -> tuple[str, ...]:
    """`(col, …)` after CLUSTER BY, each once and as many as Delta clusters by;
    `clustering_columns` checks them against the columns."""
    names = _column_list(cursor, CLUSTERING, what)
    if len(names) > MOST_CLUSTERING_COLUMNS:
        raise LakeError(
            f"the clustering of {what} lists {len(names)} columns: files are clustered by "
            f"{MOST_CLUSTERING_COLUMNS} at most",
            f"cluster by the {MOST_CLUSTERING_COLUMNS} columns its readers filter or join on most",
        )
    return names


def _column_list(cursor: TokenCursor, kind: ColumnList, what: str) -> tuple[str, ...]:
    """`(col, …)` after the clause of a `kind` of column list, each column named once."""
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    if cursor.accept_symbol(TokenType.R_PAREN):
        raise LakeError(
            f"the {kind.title} of {what} lists no column",
            f"name its columns: {kind.clause} (col, …)",
        )
    names = [cursor.identifier(f"a {kind.noun} name")]
    while cursor.accept_symbol(TokenType.COMMA):
        names.append(cursor.identifier(f"a {kind.noun} name"))
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    lowered = [name.lower() for name in names]
    twice = [name for name, low in zip(names, lowered, strict=True) if lowered.count(low) > 1]
    if twice:
        raise LakeError(
            f"column {twice[0]} appears twice in the {kind.title} of {what}",
            f"name each {kind.noun} once",
        )
    return tuple(names)


def key_alterations(
    statement: type[AlterTablePrimaryKey], label: str
) -> dict[tuple[str, ...], Alteration]:
    """SET / DROP PRIMARY KEY, for the ALTER statement of a kind that keeps a key."""

    def set_key(cursor: TokenCursor, name: str) -> Statement:
        return statement(name, primary_key_columns(cursor, f"{label} {name}"))

    return {
        ("SET", PRIMARY_KEY.clause): set_key,
        ("DROP", PRIMARY_KEY.clause): lambda cursor, name: statement(name, ()),
    }


def accept_alteration(
    cursor: TokenCursor, name: str, alterations: dict[tuple[str, ...], Alteration]
) -> Statement | None:
    """The statement of the alteration whose words come next, or None when none does."""
    for words, alteration in alterations.items():
        if cursor.accept(*words):
            return finished(cursor, alteration(cursor, name))
    return None


def parse_drop_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = DROP_TABLE
    cursor.expect("DROP", "TABLE")
    if_exists = cursor.accept("IF", "EXISTS")
    return finished(cursor, DropTable(cursor.name("a table name"), if_exists))


def parse_alter_table(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = ALTER_TABLE
    cursor.expect("ALTER", "TABLE")
    name = cursor.name("a table name")
    statement = accept_alteration(cursor, name, _ALTERATIONS)
    if statement is None:
        raise unsupported(cursor.tokens)
    return statement


def _clustering(cursor: TokenCursor, name: str) -> Statement:
    """What follows ALTER TABLE t CLUSTER BY: the columns, or NONE for none."""
    if cursor.accept("NONE"):
        return AlterTableClustering(name, ())
    return AlterTableClustering(name, cluster_columns(cursor, f"table {name}"))


_ALTERATIONS: dict[tuple[str, ...], Alteration] = {
    ("SET", "PROPERTIES"): lambda cursor, name: AlterTableProperties(name, cursor.properties()),
    **key_alterations(AlterTablePrimaryKey, "table"),
    (CLUSTERING.clause,): _clustering,
    # Before ADD [COLUMN] and DROP COLUMN: CONSTRAINT is no column's type.
    ("ADD", "CONSTRAINT"): lambda cursor, name: AddExpectation(name, parse_expectation(cursor)),
    ("DROP", "CONSTRAINT"): lambda cursor, name: DropExpectation(
        name, cursor.identifier("the expectation to drop")
    ),
    **ALTERATIONS,
}


def parse_restore(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = RESTORE_TABLE
    cursor.expect("RESTORE")
    cursor.accept("TABLE")
    name = cursor.name("a table name")
    cursor.expect("TO")
    if cursor.accept("VERSION"):
        cursor.accept("AS", "OF")
        to = Position(version=cursor.integer("a version number"))
    else:
        cursor.expect("TIMESTAMP")
        cursor.accept("AS", "OF")
        to = Position(timestamp=cursor.string("a quoted timestamp"))
    return finished(cursor, RestoreTable(name, to))


def parse_truncate(cursor: TokenCursor, grammar: Grammar) -> Statement:
    """TRUNCATE is a DELETE of every row: one commit, its deletions seen by readers of changes."""
    cursor.usage = TRUNCATE_TABLE
    cursor.expect("TRUNCATE")
    cursor.accept("TABLE")
    name = cursor.name("a table name")
    return finished(cursor, Dml("DELETE", name, exp.Delete(this=exp.to_table(name))))


def parse_optimize(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = OPTIMIZE
    cursor.expect("OPTIMIZE")
    name = cursor.name("a table name")
    return finished(cursor, Optimize(name, cursor.accept("FULL")))


def parse_describe(cursor: TokenCursor, grammar: Grammar) -> Statement:
    """DESC without a kind's word: a table (or dynamic table), or the history of one."""
    cursor.usage = DESCRIBE
    cursor.position += 1
    if cursor.word() == "HISTORY" and cursor.peek(1) is not None:
        cursor.position += 1
        return finished(cursor, DescribeHistory(cursor.name("a table name")))
    cursor.accept("TABLE")
    cursor.accept("EXTENDED")
    return finished(cursor, DescribeTable(cursor.name("a table name")))


def parse_show_tables(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = "SHOW TABLES"
    cursor.expect("SHOW", "TABLES")
    return finished(cursor, ShowTables())


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "TABLE"): parse_create_table,
    ("DROP", "TABLE"): parse_drop_table,
    ("ALTER", "TABLE"): parse_alter_table,
    ("TRUNCATE",): parse_truncate,
    ("RESTORE",): parse_restore,
    ("OPTIMIZE",): parse_optimize,
    ("DESC",): parse_describe,
    ("DESCRIBE",): parse_describe,
    ("SHOW", "TABLES"): parse_show_tables,
}
SOURCES: dict[str, SourceParser] = {
    "QUARANTINED_ROWS": table_relation(QuarantinedRowsSource, "quarantined_rows('table')"),
}
