"""The dynamic table statements of the `lake sql` dialect."""

from __future__ import annotations

import pytest

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.dynamic_tables.entry import DOWNSTREAM, RefreshModeChoice, TargetLag
from lake_assets.dynamic_tables.grammar import (
    AlterDynamicTable,
    AlterDynamicTablePrimaryKey,
    AlterTargetLag,
    CreateDynamicTable,
    RefreshDynamicTable,
    ShowRefreshHistory,
)
from lake_assets.kinds import parse_statement
from lake_assets.sql.statements import DescribeObject, DropObject, ShowObjects

SUMMARY = """CREATE OR REPLACE DYNAMIC TABLE sales_summary REFRESH INTERVAL 1 HOUR vcluster DEFAULT
COMMENT 'Category summary — incremental refresh' AS SELECT category, COUNT(*) AS order_cnt,
SUM(amount) AS total_amount FROM sales_ods GROUP BY category"""


def test_create_or_replace_with_an_interval_a_vcluster_and_a_comment() -> None:
    statement = parse_statement(SUMMARY)
    assert isinstance(statement, CreateDynamicTable)
    assert statement.name == "sales_summary"
    assert statement.or_replace
    assert not statement.if_not_exists
    assert statement.refresh_interval_seconds == 3600
    assert statement.vcluster == "DEFAULT"
    assert statement.comment == "Category summary — incremental refresh"
    assert statement.query_text.startswith("SELECT category, COUNT(*) AS order_cnt")
    assert statement.query.expression.find_all  # a sqlglot expression
    assert statement.columns == ()


def test_column_list_options_in_any_order_and_units() -> None:
    statement = parse_statement(
        "CREATE DYNAMIC TABLE IF NOT EXISTS d (a COMMENT 'first', b) COMMENT 'c' "
        "REFRESH INTERVAL 30 SECONDS AS SELECT x, y FROM t"
    )
    assert isinstance(statement, CreateDynamicTable)
    assert statement.if_not_exists
    assert statement.columns == (Column("a", "", "first"), Column("b", "", None))
    assert (statement.refresh_interval_seconds, statement.comment) == (30, "c")
    for unit, seconds in (("MINUTE", 120), ("DAY", 172800), ("HOURS", 7200)):
        parsed = parse_statement(f"CREATE DYNAMIC TABLE d REFRESH INTERVAL 2 {unit} AS SELECT 1")
        assert parsed.refresh_interval_seconds == seconds


def test_an_interval_runs_from_the_daemons_loop_to_a_year() -> None:
    for text, seconds in (("5 SECOND", 5), ("365 DAYS", 365 * 86400), ("8760 HOUR", 365 * 86400)):
        parsed = parse_statement(f"CREATE DYNAMIC TABLE d REFRESH INTERVAL {text} AS SELECT 1")
        assert parsed.refresh_interval_seconds == seconds


@pytest.mark.parametrize(
    ("interval", "message"),
    [
        (
            "1 SECOND",
            "REFRESH INTERVAL 1 SECOND is shorter than 5 seconds — the Dagster daemon looks for "
            "due runs every 5 s: write REFRESH INTERVAL 5 SECOND or longer",
        ),
        (
            "4 SECONDS",
            "REFRESH INTERVAL 4 SECOND is shorter than 5 seconds — the Dagster daemon looks for "
            "due runs every 5 s: write REFRESH INTERVAL 5 SECOND or longer",
        ),
        (
            "366 DAY",
            "REFRESH INTERVAL 366 DAY is longer than 365 days — write REFRESH INTERVAL 365 DAY "
            "or shorter",
        ),
        (
            "99999999999999 DAY",
            "REFRESH INTERVAL 99999999999999 DAY is longer than 365 days — write REFRESH "
            "INTERVAL 365 DAY or shorter",
        ),
    ],
)
def test_an_interval_out_of_bounds_is_refused_in_one_line(interval: str, message: str) -> None:
    with pytest.raises(LakeError) as caught:
        parse_statement(f"CREATE DYNAMIC TABLE d REFRESH INTERVAL {interval} AS SELECT 1")
    assert str(caught.value) == message


def test_target_lag_is_a_lag_in_words_or_downstream() -> None:
    for text, lag in (("'5 minutes'", TargetLag(300)), ("'1 hour'", TargetLag(3600)),
                      ("'90 SECONDS'", TargetLag(90)), ("downstream", DOWNSTREAM)):  # fmt: skip
        parsed = parse_statement(f"CREATE DYNAMIC TABLE d TARGET_LAG = {text} AS SELECT x FROM t")
        assert isinstance(parsed, CreateDynamicTable)
        assert parsed.target_lag == lag
    assert [TargetLag(7200).text, TargetLag(60).text, TargetLag(90).text] == [
        "2 hours", "1 minute", "90 seconds",
    ]  # fmt: skip
    assert parse_statement("ALTER DYNAMIC TABLE d SET TARGET_LAG = '2 days'") == AlterTargetLag(
        "d", TargetLag(2 * 86400)
    )


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        (
            "TARGET_LAG = '59 seconds'",
            "TARGET_LAG '59 seconds' is shorter than 1 minute — Dagster's freshness policy, which "
            "shows the table fresh or late, counts from a minute: write TARGET_LAG = '1 minute' or "
            "longer",
        ),
        (
            "TARGET_LAG = 'soon'",
            "TARGET_LAG 'soon' is not a lag — write a whole number and a unit, e.g. "
            "TARGET_LAG = '5 minutes', or DOWNSTREAM",
        ),
        (
            "TARGET_LAG = '99999999999999 days'",
            "TARGET_LAG '99999999999999 days' is longer than 365 days — write TARGET_LAG = "
            "'365 days' or shorter",
        ),
        (
            "TARGET_LAG = '1 hour' REFRESH INTERVAL 1 HOUR",
            "dynamic table d gives both REFRESH INTERVAL and TARGET_LAG — keep one: TARGET_LAG "
            "refreshes as often as the lag needs, REFRESH INTERVAL on a clock",
        ),
    ],
)
def test_a_bad_target_lag_is_refused_in_one_line(clause: str, message: str) -> None:
    with pytest.raises(LakeError) as caught:
        parse_statement(f"CREATE DYNAMIC TABLE d {clause} AS SELECT x FROM t")
    assert str(caught.value) == message


def test_refresh_mode_is_auto_unless_declared() -> None:
    assert parse_statement(SUMMARY).refresh_mode is RefreshModeChoice.AUTO
    for mode in ("AUTO", "INCREMENTAL", "FULL"):
        parsed = parse_statement(
            f"CREATE DYNAMIC TABLE d REFRESH_MODE = {mode.lower()} COMMENT 'c' AS SELECT x FROM t"
        )
        assert parsed.refresh_mode is RefreshModeChoice(mode)
    with pytest.raises(LakeError, match="expected AUTO, INCREMENTAL or FULL"):
        parse_statement("CREATE DYNAMIC TABLE d REFRESH_MODE = SOMETIMES AS SELECT x FROM t")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("REFRESH DYNAMIC TABLE Sales_Summary", RefreshDynamicTable("sales_summary")),
        ("DROP DYNAMIC TABLE d", DropObject("dynamic table", "d")),
        ("DROP DYNAMIC TABLE IF EXISTS d", DropObject("dynamic table", "d", if_exists=True)),
        ("SHOW DYNAMIC TABLES", ShowObjects("dynamic table")),
        ("SHOW DYNAMIC TABLE REFRESH HISTORY", ShowRefreshHistory()),
        (
            "SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'Sales_Summary'",
            ShowRefreshHistory("sales_summary"),
        ),
        ("DESC DYNAMIC TABLE d", DescribeObject("dynamic table", "d")),
        ("DESCRIBE DYNAMIC TABLE d", DescribeObject("dynamic table", "d")),
        ("ALTER DYNAMIC TABLE d SUSPEND", AlterDynamicTable("d", suspended=True)),
        ("ALTER DYNAMIC TABLE d RESUME", AlterDynamicTable("d", suspended=False)),
    ],
)
def test_the_other_statements(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE DYNAMIC TABLE d AS", "expected SELECT"),
        ("CREATE DYNAMIC TABLE d REFRESH INTERVAL 1 WEEK AS SELECT 1", "SECOND, MINUTE, HOUR"),
        ("CREATE DYNAMIC TABLE d REFRESH INTERVAL 0 HOUR AS SELECT 1", "shorter than 5 seconds"),
        (
            "CREATE DYNAMIC TABLE d LAG = 1 AS SELECT 1",
            "REFRESH INTERVAL, TARGET_LAG, REFRESH_MODE, VCLUSTER, COMMENT or AS",
        ),
        ("CREATE DYNAMIC TABLE d AS INSERT INTO t VALUES (1)", "must be defined by a SELECT"),
        ("CREATE DYNAMIC TABLE d (a, a) AS SELECT 1, 2", "appears twice"),
        ("CREATE OR REPLACE DYNAMIC TABLE IF NOT EXISTS d AS SELECT 1", "cannot be used together"),
        ("CREATE OR REPLACE TABLE t (a INT)", "not supported yet"),
        ("ALTER DYNAMIC TABLE d PAUSE", "expected RESUME"),
        ("SHOW DYNAMIC TABLE REFRESH HISTORY WHERE id = 'x'", "expected NAME"),
        ("REFRESH DYNAMIC TABLE", "expected a dynamic table name"),
    ],
)
def test_errors_say_what_and_how(text: str, message: str) -> None:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    assert message in str(caught.value)


@pytest.mark.parametrize("mode", ["AUTO", "INCREMENTAL", "FULL"])
@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("SELECT id FROM src VERSION AS OF 1", "src VERSION AS OF"),
        ("SELECT s.id FROM src TIMESTAMP AS OF '2026-01-01' s", "src TIMESTAMP AS OF"),
        (
            "SELECT t.id FROM t JOIN (SELECT id FROM src VERSION AS OF 3) s ON s.id = t.id",
            "src VERSION AS OF",
        ),
    ],
)
def test_time_travel_is_refused_at_create_in_every_mode(mode: str, query: str, words: str) -> None:
    """A source read as of a fixed version never changes: a dynamic table has nothing to refresh
    from it, and the refusal names the table and its own words, nothing of the refresh's."""
    for statement in (
        f"CREATE DYNAMIC TABLE d REFRESH_MODE = {mode} AS {query}",
        f"EXPLAIN CREATE DYNAMIC TABLE d REFRESH_MODE = {mode} AS {query}",
    ):
        with pytest.raises(LakeError) as caught:
            parse_statement(statement)
        assert str(caught.value) == (
            f"dynamic table d reads {words} …: a dynamic table reads its sources' current "
            f"versions, and a fixed version never changes — query the past version with "
            f"SELECT … FROM {words} …, or copy it once into a table with "
            f"INSERT INTO … SELECT … FROM {words} …"
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ALTER DYNAMIC TABLE D SET PRIMARY KEY (Category, dt)",
            AlterDynamicTablePrimaryKey("d", ("Category", "dt")),
        ),
        ("alter dynamic table d drop primary key", AlterDynamicTablePrimaryKey("d", ())),
    ],
)
def test_alter_dynamic_table_primary_key(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ALTER DYNAMIC TABLE d SET PRIMARY KEY ()", "the primary key of dynamic table d lists"),
        ("ALTER DYNAMIC TABLE d SET PRIMARY KEY (a, A)", "column a appears twice in the primary"),
        ("ALTER DYNAMIC TABLE d DROP PRIMARY KEY (a)", "expected the end of the statement"),
        ("ALTER DYNAMIC TABLE d SUSPEND NOW", "expected the end of the statement"),
    ],
)
def test_alter_dynamic_table_primary_key_errors(text: str, message: str) -> None:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    assert message in str(caught.value)
