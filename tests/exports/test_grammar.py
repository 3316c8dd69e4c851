"""The changelog export statements of issue 20, parsed without Spark: both statements,
their options in any order, the defaults, the shared SHOW/DESC/DROP forms, and every refusal with
its one line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.exports.entry import DEFAULT_MAX_RETRIES, DEFAULT_STATUS_TABLE
from lake_assets.exports.grammar import CreateExport, ExportChangelog, TimeRange
from lake_assets.kinds import parse_statement
from lake_assets.sql.statements import DescribeObject, DropObject, ShowObjects

CREATE = "CREATE CHANGELOG EXPORT e FROM TABLE t TO "
DAY_MS = 24 * 3600 * 1000


def create(text: str) -> CreateExport:
    statement = parse_statement(text)
    assert isinstance(statement, CreateExport)
    return statement


def export(text: str) -> ExportChangelog:
    statement = parse_statement(text)
    assert isinstance(statement, ExportChangelog)
    return statement


def refused(text: str) -> str:
    """The one-line message a statement is refused with."""
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_export_to_a_table_takes_the_defaults() -> None:
    statement = create("create changelog export E from table T to table R")
    assert statement == CreateExport(
        "e",
        "t",
        to_table="r",
        to_volume=None,
        subdirectory="",
        file_format="PARQUET",
        status_table=DEFAULT_STATUS_TABLE,
        sequence_info=False,
        max_retries=DEFAULT_MAX_RETRIES,
        comment=None,
        if_not_exists=False,
    )
    assert (DEFAULT_STATUS_TABLE, DEFAULT_MAX_RETRIES) == ("lake_changelog_status", 30)


def test_an_export_to_a_volume_takes_the_defaults() -> None:
    statement = create(CREATE + "VOLUME v")
    assert (statement.to_table, statement.to_volume) == (None, "v")
    assert (statement.subdirectory, statement.file_format) == ("", "PARQUET")
    assert (statement.status_table, statement.sequence_info, statement.max_retries) == (
        DEFAULT_STATUS_TABLE,
        False,
        DEFAULT_MAX_RETRIES,
    )


@pytest.mark.parametrize(
    "options",
    [
        "EXPORT_SEQUENCE_INFO = TRUE STATUS_TABLE = 'My_Status' MAX_RETRIES = 2 COMMENT 'c'",
        "MAX_RETRIES = 2 COMMENT 'c' STATUS_TABLE = 'My_Status' EXPORT_SEQUENCE_INFO = TRUE",
        "COMMENT 'c' STATUS_TABLE = 'My_Status' EXPORT_SEQUENCE_INFO = TRUE MAX_RETRIES = 2",
    ],
)
def test_the_options_of_an_export_to_a_table_in_any_order(options: str) -> None:
    statement = create(f"CREATE CHANGELOG EXPORT IF NOT EXISTS e FROM TABLE t TO TABLE r {options}")
    assert statement == CreateExport(
        "e",
        "t",
        to_table="r",
        status_table="my_status",
        sequence_info=True,
        max_retries=2,
        comment="c",
        if_not_exists=True,
    )


@pytest.mark.parametrize(
    "options",
    [
        "SUBDIRECTORY 'x/' FILE_FORMAT = (TYPE = CSV) MAX_RETRIES = 0 EXPORT_SEQUENCE_INFO = FALSE",
        "EXPORT_SEQUENCE_INFO = FALSE FILE_FORMAT = (TYPE = csv) MAX_RETRIES = 0 SUBDIRECTORY 'x/'",
        "MAX_RETRIES = 0 EXPORT_SEQUENCE_INFO = FALSE SUBDIRECTORY 'x/' FILE_FORMAT = (TYPE = CSV)",
    ],
)
def test_the_options_of_an_export_to_a_volume_in_any_order(options: str) -> None:
    statement = create(f"{CREATE}VOLUME v {options}")
    assert statement == CreateExport(
        "e", "t", to_volume="v", subdirectory="x", file_format="CSV", max_retries=0
    )


@pytest.mark.parametrize("file_format", ["PARQUET", "CSV", "JSON"])
def test_each_file_format(file_format: str) -> None:
    statement = create(f"{CREATE}VOLUME v FILE_FORMAT = (TYPE = {file_format.lower()})")
    assert statement.file_format == file_format


def test_a_date_is_its_utc_day() -> None:
    statement = export("export changelog E (date => '20261124')")
    midnight = int(datetime(2026, 11, 24, tzinfo=UTC).timestamp() * 1000)
    assert statement == ExportChangelog("e", TimeRange(midnight, midnight + DAY_MS, "20261124"))
    assert statement.range.label == "date=20261124"


def test_a_range_is_its_start_and_end_in_millis() -> None:
    statement = export(
        "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 1441803688001, "
        "END_TIMESTAMP_MILLIS => 1441803688005)"
    )
    assert statement == ExportChangelog("e", TimeRange(1441803688001, 1441803688005))
    assert statement.range.label == "range=1441803688001-1441803688005"


def test_show_desc_and_drop_take_the_shared_forms() -> None:
    assert parse_statement("SHOW CHANGELOG EXPORTS") == ShowObjects("export")
    assert parse_statement("DESC CHANGELOG EXPORT e") == DescribeObject("export", "e")
    assert parse_statement("DESCRIBE CHANGELOG EXPORT e") == DescribeObject("export", "e")
    assert parse_statement("DROP CHANGELOG EXPORT e") == DropObject("export", "e")
    assert parse_statement("DROP CHANGELOG EXPORT IF EXISTS e") == DropObject(
        "export", "e", if_exists=True
    )


USAGE = (
    "EXPORT CHANGELOG e (DATE => 'yyyyMMdd' | START_TIMESTAMP_MILLIS => n, "
    "END_TIMESTAMP_MILLIS => m)"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "EXPORT CHANGELOG e (DATE => '20261124', START_TIMESTAMP_MILLIS => 1, "
            "END_TIMESTAMP_MILLIS => 2)",
            f"EXPORT CHANGELOG e takes either DATE or the range, not both — write {USAGE}",
        ),
        (
            "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 1, END_TIMESTAMP_MILLIS => 2, "
            "DATE => '20261124')",
            f"EXPORT CHANGELOG e takes either DATE or the range, not both — write {USAGE}",
        ),
        (
            "EXPORT CHANGELOG e ()",
            f"syntax error: expected DATE or START_TIMESTAMP_MILLIS but found ')' — write it as "
            f"{USAGE}",
        ),
        (
            "EXPORT CHANGELOG e",
            f"syntax error: expected '(' but found the end of the statement — write it as {USAGE}",
        ),
        (
            "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 1)",
            f"syntax error: expected ',' but found ')' — write it as {USAGE}",
        ),
        (
            "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 5, END_TIMESTAMP_MILLIS => 5)",
            "END_TIMESTAMP_MILLIS 5 is not after START_TIMESTAMP_MILLIS 5 — give a range whose "
            "end is later than its start (the end is left out)",
        ),
        (
            "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 5, END_TIMESTAMP_MILLIS => 4)",
            "END_TIMESTAMP_MILLIS 4 is not after START_TIMESTAMP_MILLIS 5 — give a range whose "
            "end is later than its start (the end is left out)",
        ),
        (
            "EXPORT CHANGELOG e (DATE => '2026-11-24')",
            "DATE '2026-11-24' is not a day written yyyyMMdd — write it as DATE => '20261123'",
        ),
        (
            "EXPORT CHANGELOG e (DATE => '20261324')",
            "DATE '20261324' is not a day written yyyyMMdd — write it as DATE => '20261123'",
        ),
        (
            "EXPORT CHANGELOG e (DATE => 20261124)",
            f"syntax error: expected a quoted day, yyyyMMdd but found '20261124' — write it as "
            f"{USAGE}",
        ),
        (
            "EXPORT CHANGELOG e (DATE => '20261124') NOW",
            f"syntax error: expected the end of the statement but found 'NOW' — write it as "
            f"{USAGE}",
        ),
    ],
)
def test_export_changelog_refusals(text: str, message: str) -> None:
    assert refused(text) == message


def test_file_format_and_subdirectory_are_refused_on_an_export_to_a_table() -> None:
    assert refused(CREATE + "TABLE r FILE_FORMAT = (TYPE = CSV)") == (
        "FILE_FORMAT is for an export to a volume; export e writes a table — leave FILE_FORMAT "
        "out, or export TO VOLUME v"
    )
    assert refused(CREATE + "TABLE r MAX_RETRIES = 1 SUBDIRECTORY 'x/'") == (
        "SUBDIRECTORY is for an export to a volume; export e writes a table — leave SUBDIRECTORY "
        "out, or export TO VOLUME v"
    )


def test_an_unknown_option_is_refused_naming_the_options() -> None:
    message = refused(CREATE + "TABLE r MAX_RETRIES = 1 BATCH_SIZE = 5")
    assert message.startswith(
        "syntax error: expected SUBDIRECTORY or FILE_FORMAT or STATUS_TABLE or "
        "EXPORT_SEQUENCE_INFO or COMMENT but found 'BATCH_SIZE' — write it as CREATE CHANGELOG "
        "EXPORT [IF NOT EXISTS] e FROM TABLE t TO TABLE target | TO VOLUME v"
    )


@pytest.mark.parametrize(
    "options",
    [
        "MAX_RETRIES = 1 MAX_RETRIES = 2",
        "STATUS_TABLE = 's' EXPORT_SEQUENCE_INFO = TRUE STATUS_TABLE = 's'",
        "FILE_FORMAT = (TYPE = CSV) FILE_FORMAT = (TYPE = CSV)",
    ],
)
def test_an_option_given_twice_is_refused_at_its_second_mention(options: str) -> None:
    twice = options.split()[0]
    message = refused(f"{CREATE}VOLUME v {options}")
    what = message.split(" — ")[0]
    assert what.startswith("syntax error: expected ")
    assert what.endswith(f" but found '{twice}'")
    # The option given already is no longer among those expected.
    assert twice not in what.removesuffix(f" but found '{twice}'")


@pytest.mark.parametrize(
    ("options", "what"),
    [
        ("FILE_FORMAT = (TYPE = XML)", "FILE_FORMAT needs TYPE = PARQUET, CSV or JSON"),
        (
            "MAX_RETRIES = -1",
            "syntax error: expected a number of retries (0 or more) but found '-'",
        ),
        (
            "EXPORT_SEQUENCE_INFO = 'yes'",
            "syntax error: expected TRUE or FALSE for EXPORT_SEQUENCE_INFO but found 'yes'",
        ),
        ("STATUS_TABLE = s", "syntax error: expected a quoted status table name but found 's'"),
    ],
)
def test_bad_option_values_are_refused(options: str, what: str) -> None:
    assert refused(f"{CREATE}VOLUME v {options}").startswith(what)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (
            "CREATE CHANGELOG EXPORT e FROM t TO TABLE r",
            "syntax error: expected FROM TABLE but found 'FROM'",
        ),
        ("CREATE CHANGELOG EXPORT e FROM TABLE t", "syntax error: expected TO but found the end"),
        ("CREATE CHANGELOG EXPORT e FROM TABLE t TO STAGE s", "syntax error: expected VOLUME"),
    ],
)
def test_a_create_without_its_source_or_target_is_refused(text: str, what: str) -> None:
    assert refused(text).startswith(what)
