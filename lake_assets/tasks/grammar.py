"""CREATE TASK, ALTER TASK … SUSPEND|RESUME, EXECUTE TASK and SHOW TASK HISTORY; SHOW, DESC and
DROP take the forms every kind shares (`SHOW TASKS`, `DESC TASK t`, `DROP TASK [IF EXISTS] t`)."""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.core.intervals import LONGEST_DAYS, SHORTEST_SECONDS, checked_interval
from lake_assets.sql.binding import referenced_tables
from lake_assets.sql.grammar import (
    Grammar,
    ObjectWords,
    StatementParser,
    finished,
    split_statements,
)
from lake_assets.sql.statements import Dml, Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.tasks.entry import Schedule
from lake_assets.volumes.grammar import CopyIntoVolume

CREATE_TASK = (
    "CREATE TASK [IF NOT EXISTS] name [SCHEDULE = 'n SECOND|MINUTE|HOUR' | "
    "SCHEDULE = 'USING CRON <min> <hour> <day> <month> <weekday> [<time zone>]'] "
    "[WHEN STREAM_HAS_DATA('s') [AND|OR STREAM_HAS_DATA('s2') …]] [COMMENT '…'] "
    "AS INSERT … | UPDATE … | DELETE … | MERGE … | COPY INTO VOLUME …"
)
EXECUTE_TASK = "EXECUTE TASK name"
SHOW_TASK_HISTORY = "SHOW TASK HISTORY [WHERE name = '…']"
WORDS = ObjectWords("task", (("TASK",),))
_UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600}
_SCHEDULE_FIX = "write SCHEDULE = '5 MINUTE' or SCHEDULE = 'USING CRON 0 9 * * * Europe/Paris'"
_WHEN_CALL = "STREAM_HAS_DATA"
# What a task runs: one statement that writes.
TaskStatement = Dml | CopyIntoVolume


@dataclass(frozen=True)
class CreateTask(Statement):
    """`when` is STREAM_HAS_DATA's streams as OR of ANDs (AND binds first, as in SQL)."""

    name: str
    statement: TaskStatement
    definition: str
    schedule: Schedule | None = None
    when: tuple[tuple[str, ...], ...] = ()
    comment: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTask(Statement):
    name: str
    suspended: bool


@dataclass(frozen=True)
class ExecuteTask(Statement):
    name: str


@dataclass(frozen=True)
class ShowTaskHistory(Statement):
    """`SHOW TASK HISTORY [WHERE name = '…']`."""

    name: str | None = None


def parse_create_task(cursor: TokenCursor, grammar: Grammar) -> Statement:
    """The options in any order, each once, then AS and the statement."""
    cursor.usage = CREATE_TASK
    cursor.expect("CREATE", "TASK")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a task name")
    schedule = comment = None
    when: tuple[tuple[str, ...], ...] = ()
    while not cursor.accept("AS"):
        if schedule is None and cursor.accept("SCHEDULE"):
            cursor.expect_symbol(TokenType.EQ, "=")
            schedule = parse_schedule(cursor.string("a quoted schedule"))
        elif not when and cursor.accept("WHEN"):
            when = _when(cursor)
        elif comment is None and cursor.accept("COMMENT"):
            comment = cursor.string("a comment")
        else:
            cursor.fail("SCHEDULE, WHEN, COMMENT or AS")
    statement, definition = _statement(cursor, grammar, name)
    read = reads(statement)
    unread = [stream for group in when for stream in group if stream not in read]
    if unread:
        raise LakeError(
            f"task {name} waits for data on stream {unread[0]}, which its statement does not read",
            f"name in WHEN only streams the statement reads, or read {unread[0]} in it",
        )
    return CreateTask(name, statement, definition, schedule, when, comment, if_not_exists)


def parse_schedule(text: str) -> Schedule:
    """`n SECOND|MINUTE|HOUR` (plural too), or `USING CRON <5 fields> [<IANA time zone>]`."""
    words = text.split()
    if [word.upper() for word in words[:2]] == ["USING", "CRON"]:
        return _cron(text, words[2:])
    if len(words) == 2 and words[0].isdigit():
        unit = words[1].upper().removesuffix("S")
        if unit in _UNIT_SECONDS:
            seconds = checked_interval(
                f"SCHEDULE '{text}'",
                int(words[0]) * _UNIT_SECONDS[unit],
                shortest=f"SCHEDULE = '{SHORTEST_SECONDS} SECOND'",
                longest=f"SCHEDULE = '{LONGEST_DAYS * 24} HOUR'",
            )
            return Schedule(text, interval_seconds=seconds)
    raise LakeError(f"SCHEDULE '{text}' is neither an interval nor a cron", _SCHEDULE_FIX)


def _cron(text: str, fields: list[str]) -> Schedule:
    from dagster._utils.schedules import is_valid_cron_string  # Dagster loads only for a cron

    if len(fields) not in (5, 6):
        raise LakeError(
            f"SCHEDULE '{text}' needs a cron of five fields and an optional time zone",
            "write the minute, hour, day of month, month and day of week, e.g. "
            "'USING CRON 0 9 * * MON-FRI Europe/Paris'",
        )
    timezone = fields.pop() if len(fields) == 6 else "UTC"
    cron = " ".join(fields)
    if not is_valid_cron_string(cron):
        raise LakeError(f"'{cron}' in SCHEDULE is not a valid cron", _SCHEDULE_FIX)
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise LakeError(
            f"'{timezone}' in SCHEDULE is not a time zone",
            "use an IANA name such as UTC, Europe/Paris or America/Los_Angeles",
        ) from None
    return Schedule(text, cron=cron, timezone=timezone)


def _when(cursor: TokenCursor) -> tuple[tuple[str, ...], ...]:
    """`STREAM_HAS_DATA('s') [AND|OR STREAM_HAS_DATA('s2') …]` as OR of ANDs."""
    groups = [[_has_data(cursor)]]
    while True:
        if cursor.accept("AND"):
            groups[-1].append(_has_data(cursor))
        elif cursor.accept("OR"):
            groups.append([_has_data(cursor)])
        else:
            return tuple(tuple(dict.fromkeys(group)) for group in groups)


def _has_data(cursor: TokenCursor) -> str:
    cursor.expect(_WHEN_CALL)
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    stream = cursor.string("a quoted stream name").lower()
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return stream


def _statement(cursor: TokenCursor, grammar: Grammar, name: str) -> tuple[TaskStatement, str]:
    """The one writing statement after AS, parsed as `lake sql` parses it, and its text."""
    start = cursor.peek()
    if start is None:
        cursor.fail("the statement the task runs")
    text = cursor.text[start.start :].strip()
    cursor.position = len(cursor.tokens)
    if len(split_statements(text)) > 1:
        raise LakeError(
            f"task {name} runs one statement, and this has more",
            "write one INSERT, UPDATE, DELETE, MERGE or COPY INTO VOLUME after AS",
        )
    statement = grammar.parse(text)
    if not isinstance(statement, TaskStatement):
        raise LakeError(
            f"task {name} must run an INSERT, UPDATE, DELETE, MERGE or COPY INTO VOLUME",
            "put the statement that writes after AS; queries and DDL cannot be tasks",
        )
    return statement, text


def reads(statement: TaskStatement) -> list[str]:
    """The relations a task's statement names (streams among them are what it consumes)."""
    if isinstance(statement, Dml):
        return referenced_tables(statement.expression)
    if statement.query is not None:
        return referenced_tables(statement.query.expression)
    return [statement.table] if statement.table is not None else []


def parse_alter_task(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = "ALTER TASK name SUSPEND|RESUME"
    cursor.expect("ALTER", "TASK")
    name = cursor.name("a task name")
    if cursor.accept("SUSPEND"):
        return finished(cursor, AlterTask(name, suspended=True))
    cursor.expect("RESUME")
    return finished(cursor, AlterTask(name, suspended=False))


def parse_execute_task(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = EXECUTE_TASK
    cursor.expect("EXECUTE", "TASK")
    return finished(cursor, ExecuteTask(cursor.name("a task name")))


def parse_task_history(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = SHOW_TASK_HISTORY
    cursor.expect("SHOW", "TASK", "HISTORY")
    name = None
    if cursor.accept("WHERE"):
        cursor.expect("NAME")
        cursor.expect_symbol(TokenType.EQ, "=")
        name = cursor.string("a quoted task name").lower()
    return finished(cursor, ShowTaskHistory(name))


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "TASK"): parse_create_task,
    ("ALTER", "TASK"): parse_alter_task,
    ("EXECUTE", "TASK"): parse_execute_task,
    ("SHOW", "TASK", "HISTORY"): parse_task_history,
}
