"""The task statements of the `lake sql` dialect: every form, and every refusal with its message."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.sql.statements import DescribeObject, Dml, DropObject, ShowObjects
from lake_assets.tasks.entry import Schedule
from lake_assets.tasks.grammar import (
    AlterTask,
    CreateTask,
    ExecuteTask,
    ShowTaskHistory,
    parse_schedule,
    reads,
)
from lake_assets.volumes.grammar import CopyIntoVolume

CONSUMER = "INSERT INTO tgt SELECT id, name FROM s"


def create(text: str) -> CreateTask:
    statement = parse_statement(text)
    assert isinstance(statement, CreateTask)
    return statement


def refused(text: str) -> str:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    return str(caught.value)


def test_every_clause_in_any_order() -> None:
    statement = create(
        "CREATE TASK IF NOT EXISTS Consume COMMENT 'moves s into tgt' "
        "WHEN STREAM_HAS_DATA('S') SCHEDULE = '5 MINUTE' AS " + CONSUMER
    )
    assert (statement.name, statement.if_not_exists) == ("consume", True)
    assert statement.comment == "moves s into tgt"
    assert statement.schedule == Schedule("5 MINUTE", interval_seconds=300)
    assert statement.when == (("s",),)
    assert statement.definition == CONSUMER
    assert isinstance(statement.statement, Dml)
    assert (statement.statement.operation, statement.statement.target) == ("INSERT", "tgt")


def test_a_bare_task_runs_its_statement_only_by_hand() -> None:
    statement = create("CREATE TASK t AS DELETE FROM tgt WHERE id < 0")
    assert (statement.schedule, statement.when, statement.comment) == (None, (), None)
    assert statement.statement.operation == "DELETE"


def test_when_is_or_of_ands_and_names_each_stream_once() -> None:
    statement = create(
        "CREATE TASK t WHEN STREAM_HAS_DATA('a') AND STREAM_HAS_DATA('b') AND "
        "STREAM_HAS_DATA('a') OR STREAM_HAS_DATA('c') AS INSERT INTO tgt "
        "SELECT id FROM a UNION ALL SELECT id FROM b UNION ALL SELECT id FROM c"
    )
    assert statement.when == (("a", "b"), ("c",))


@pytest.mark.parametrize(
    "dml",
    [
        "MERGE INTO tgt USING s ON tgt.id = s.id WHEN MATCHED THEN DELETE",
        "UPDATE tgt SET name = 'x' WHERE id IN (SELECT id FROM s)",
        "DELETE FROM tgt WHERE EXISTS (SELECT 1 FROM s WHERE s.id = tgt.id)",
        "INSERT OVERWRITE tgt SELECT id, name FROM s",
    ],
)
def test_each_dml_reads_the_stream_it_waits_for(dml: str) -> None:
    statement = create(f"CREATE TASK t WHEN STREAM_HAS_DATA('s') AS {dml}")
    assert isinstance(statement.statement, Dml)
    assert "s" in reads(statement.statement)


def test_an_export_to_a_volume_is_a_task_statement() -> None:
    statement = create(
        "CREATE TASK t WHEN STREAM_HAS_DATA('s') AS COPY INTO VOLUME v SUBDIRECTORY 'out/' "
        "FROM (SELECT id FROM s) FILE_FORMAT = (TYPE = CSV)"
    )
    assert isinstance(statement.statement, CopyIntoVolume)
    assert reads(statement.statement) == ["s"]
    table = create("CREATE TASK t AS COPY INTO VOLUME v FROM TABLE tgt FILE_FORMAT = (TYPE = JSON)")
    assert reads(table.statement) == ["tgt"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5 MINUTE", Schedule("5 MINUTE", interval_seconds=300)),
        ("5 SECOND", Schedule("5 SECOND", interval_seconds=5)),
        ("8760 HOURS", Schedule("8760 HOURS", interval_seconds=365 * 86400)),
        ("30 seconds", Schedule("30 seconds", interval_seconds=30)),
        ("2 HOURS", Schedule("2 HOURS", interval_seconds=7200)),
        ("USING CRON */5 * * * *", Schedule("USING CRON */5 * * * *", cron="*/5 * * * *")),
        (
            "using cron 0 9 * * MON-FRI America/Los_Angeles",
            Schedule(
                "using cron 0 9 * * MON-FRI America/Los_Angeles",
                cron="0 9 * * MON-FRI",
                timezone="America/Los_Angeles",
            ),
        ),
    ],
)
def test_schedules(text: str, expected: Schedule) -> None:
    assert parse_schedule(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER TASK T SUSPEND", AlterTask("t", suspended=True)),
        ("ALTER TASK t RESUME", AlterTask("t", suspended=False)),
        ("EXECUTE TASK T", ExecuteTask("t")),
        ("execute  task  t -- now", ExecuteTask("t")),
        ("SHOW TASKS", ShowObjects("task")),
        ("DESC TASK t", DescribeObject("task", "t")),
        ("DESCRIBE TASK t", DescribeObject("task", "t")),
        ("DROP TASK t", DropObject("task", "t")),
        ("DROP TASK IF EXISTS t", DropObject("task", "t", if_exists=True)),
        ("SHOW TASK HISTORY", ShowTaskHistory()),
        ("SHOW TASK HISTORY WHERE name = 'Consume'", ShowTaskHistory("consume")),
    ],
)
def test_the_other_statements(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


FIX_SCHEDULE = "write SCHEDULE = '5 MINUTE' or SCHEDULE = 'USING CRON 0 9 * * * Europe/Paris'"
SHORTEST = "the Dagster daemon looks for due runs every 5 s: write SCHEDULE = '5 SECOND' or longer"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "CREATE TASK t AS SELECT id FROM s",
            "task t must run an INSERT, UPDATE, DELETE, MERGE or COPY INTO VOLUME — put the "
            "statement that writes after AS; queries and DDL cannot be tasks",
        ),
        (
            "CREATE TASK t AS CREATE TABLE x (id INT)",
            "task t must run an INSERT, UPDATE, DELETE, MERGE or COPY INTO VOLUME — put the "
            "statement that writes after AS; queries and DDL cannot be tasks",
        ),
        (
            "CREATE TASK t AS INSERT INTO tgt VALUES (1); DELETE FROM tgt",
            "task t runs one statement, and this has more — write one INSERT, UPDATE, DELETE, "
            "MERGE or COPY INTO VOLUME after AS",
        ),
        (
            "CREATE TASK t WHEN STREAM_HAS_DATA('other') AS " + CONSUMER,
            "task t waits for data on stream other, which its statement does not read — name in "
            "WHEN only streams the statement reads, or read other in it",
        ),
        (
            "CREATE TASK t SCHEDULE = 'every day' AS " + CONSUMER,
            f"SCHEDULE 'every day' is neither an interval nor a cron — {FIX_SCHEDULE}",
        ),
        (
            "CREATE TASK t SCHEDULE = '5 DAY' AS " + CONSUMER,
            f"SCHEDULE '5 DAY' is neither an interval nor a cron — {FIX_SCHEDULE}",
        ),
        (
            "CREATE TASK t SCHEDULE = '0 MINUTE' AS " + CONSUMER,
            f"SCHEDULE '0 MINUTE' is shorter than 5 seconds — {SHORTEST}",
        ),
        (
            "CREATE TASK t SCHEDULE = '1 SECOND' AS " + CONSUMER,
            f"SCHEDULE '1 SECOND' is shorter than 5 seconds — {SHORTEST}",
        ),
        (
            "CREATE TASK t SCHEDULE = '8761 HOURS' AS " + CONSUMER,
            "SCHEDULE '8761 HOURS' is longer than 365 days — write SCHEDULE = '8760 HOUR' or "
            "shorter",
        ),
        (
            "CREATE TASK t SCHEDULE = '99999999999999 HOUR' AS " + CONSUMER,
            "SCHEDULE '99999999999999 HOUR' is longer than 365 days — write SCHEDULE = "
            "'8760 HOUR' or shorter",
        ),
        (
            "CREATE TASK t SCHEDULE = 'USING CRON 0 25 * * *' AS " + CONSUMER,
            f"'0 25 * * *' in SCHEDULE is not a valid cron — {FIX_SCHEDULE}",
        ),
        (
            "CREATE TASK t SCHEDULE = 'USING CRON 0 9 * *' AS " + CONSUMER,
            "SCHEDULE 'USING CRON 0 9 * *' needs a cron of five fields and an optional time "
            "zone — write the minute, hour, day of month, month and day of week, e.g. "
            "'USING CRON 0 9 * * MON-FRI Europe/Paris'",
        ),
        (
            "CREATE TASK t SCHEDULE = 'USING CRON 0 9 * * * Mars/Olympus' AS " + CONSUMER,
            "'Mars/Olympus' in SCHEDULE is not a time zone — use an IANA name such as UTC, "
            "Europe/Paris or America/Los_Angeles",
        ),
    ],
)
def test_refusals(text: str, message: str) -> None:
    assert refused(text) == message


def test_other_executes_are_not_supported_yet() -> None:
    assert refused("EXECUTE PROCEDURE p").startswith("not supported yet: EXECUTE PROCEDURE P …")


@pytest.mark.parametrize(
    ("text", "expected", "usage"),
    [
        ("CREATE TASK t", "SCHEDULE, WHEN, COMMENT or AS", "CREATE TASK [IF NOT EXISTS] name"),
        (
            "CREATE TASK t SCHEDULE = '1 HOUR' SCHEDULE = '2 HOUR' AS " + CONSUMER,
            "SCHEDULE, WHEN, COMMENT or AS",
            "CREATE TASK [IF NOT EXISTS] name",
        ),
        (
            "CREATE TASK t WHEN HAS_DATA('s') AS " + CONSUMER,
            "STREAM_HAS_DATA",
            "CREATE TASK [IF NOT EXISTS] name",
        ),
        (
            "CREATE TASK t WHEN STREAM_HAS_DATA(s) AS " + CONSUMER,
            "a quoted stream name",
            "CREATE TASK [IF NOT EXISTS] name",
        ),
        ("CREATE TASK t AS", "the statement the task runs", "CREATE TASK [IF NOT EXISTS] name"),
        ("ALTER TASK t START", "RESUME", "ALTER TASK name SUSPEND|RESUME"),
        ("EXECUTE TASK", "a task name", "EXECUTE TASK name"),
        ("EXECUTE TASK t now", "the end of the statement", "EXECUTE TASK name"),
        ("SHOW TASK HISTORY WHERE task = 't'", "NAME", "SHOW TASK HISTORY [WHERE name = '…']"),
    ],
)
def test_syntax_errors_quote_the_usage(text: str, expected: str, usage: str) -> None:
    message = refused(text)
    assert message.startswith(f"syntax error: expected {expected} but found")
    assert f"write it as {usage}" in message
