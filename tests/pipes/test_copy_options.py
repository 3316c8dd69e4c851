"""ON_ERROR and VALIDATION_MODE: the modes and limits parsed without Spark; on real Spark + Delta,
a CSV of 10,000 records with one bad record loads its 9,999 good ones (CONTINUE, or under
'SKIP_FILE_1%') or fails whole (SKIP_FILE), ABORT_STATEMENT loads nothing, a crash after the
commit keeps each rejected record exactly once, and validation returns what a load would do,
writing nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.pipes.copy_grammar import copy_of
from lake_assets.pipes.copy_options import (
    ErrorMode,
    OnError,
    Validation,
    parse_on_error,
    parse_validation,
)
from lake_assets.pipes.loading import AFTER_COMMIT
from lake_assets.session import LakeSession
from tests.crashes import Crash, crash_at
from tests.ingest_helpers import local_volume, message, put, refused, rows

BAD_AT = 5000
COPY = "COPY INTO {table} FROM VOLUME v USING CSV FILES('{file}') ON_ERROR = {mode}"


@pytest.mark.parametrize(
    ("text", "expected", "shown"),
    [
        ("continue", OnError(ErrorMode.CONTINUE), "CONTINUE"),
        ("ABORT_STATEMENT", OnError(ErrorMode.ABORT_STATEMENT), "ABORT_STATEMENT"),
        ("SKIP_FILE", OnError(), "SKIP_FILE"),
        ("SKIP_FILE_1", OnError(), "SKIP_FILE"),
        ("skip_file_10", OnError(ErrorMode.SKIP_FILE, 10), "SKIP_FILE_10"),
        ("SKIP_FILE_5%", OnError(ErrorMode.SKIP_FILE, 5, percent=True), "'SKIP_FILE_5%'"),
    ],
)
def test_error_modes_and_limits_parse(text: str, expected: OnError, shown: str) -> None:
    assert parse_on_error(text) == expected
    assert str(expected) == shown


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("SKIP", "ON_ERROR = SKIP is not an error mode"),
        ("SKIP_FILE_0", "ON_ERROR = SKIP_FILE_0: the limit must be at least 1"),
        ("SKIP_FILE_101%", "ON_ERROR = SKIP_FILE_101%: the limit must be 1 to 100 %"),
    ],
)
def test_a_wrong_error_mode_is_one_line_that_lists_the_modes(text: str, error: str) -> None:
    with pytest.raises(LakeError) as caught:
        parse_on_error(text)
    assert str(caught.value) == (
        f"{error} — write ON_ERROR = ABORT_STATEMENT | CONTINUE | SKIP_FILE | SKIP_FILE_<n> | "
        "'SKIP_FILE_<n>%'"
    )


def test_limits_decide_which_files_fail_whole() -> None:
    assert not OnError(ErrorMode.CONTINUE).skips(10, 10)
    assert OnError(ErrorMode.ABORT_STATEMENT).skips(10, 1)
    assert not OnError(ErrorMode.ABORT_STATEMENT).skips(10, 0)
    assert (OnError().skips(10, 1), OnError().rejects_rows) == (True, False)
    assert [OnError(ErrorMode.SKIP_FILE, 3).skips(10, bad) for bad in (2, 3)] == [False, True]
    percent = OnError(ErrorMode.SKIP_FILE, 10, percent=True)
    assert [percent.skips(100, bad) for bad in (9, 10)] == [False, True]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("return_errors", Validation()), ("RETURN_ALL_ERRORS", Validation()),
     ("RETURN_10_ROWS", Validation(10))],
)  # fmt: skip
def test_validation_modes_parse(text: str, expected: Validation) -> None:
    assert parse_validation(text) == expected


def test_a_wrong_validation_mode_and_a_validating_pipe_are_refused() -> None:
    with pytest.raises(LakeError) as caught:
        parse_validation("RETURN_0_ROWS")
    assert str(caught.value) == (
        "VALIDATION_MODE = RETURN_0_ROWS is not a validation mode — write VALIDATION_MODE = "
        "RETURN_ERRORS | RETURN_<n>_ROWS"
    )
    with pytest.raises(LakeError) as caught:
        parse_statement(
            "CREATE PIPE p AS COPY INTO t FROM VOLUME v USING CSV VALIDATION_MODE = RETURN_ERRORS"
        )
    assert str(caught.value).startswith("pipe p: a pipe's COPY loads, it does not validate")


def test_copy_takes_on_error_among_its_options_in_any_order() -> None:
    copy = copy_of("COPY INTO t FROM VOLUME v USING CSV PURGE = TRUE ON_ERROR = 'skip_file_2%'")
    assert (copy.purge, copy.on_error) == (True, OnError(ErrorMode.SKIP_FILE, 2, percent=True))
    assert copy_of("COPY INTO t FROM VOLUME v USING CSV").on_error == OnError()


def csv_with_one_bad_record(records: int = 10_000) -> str:
    lines = [f"{n},item {n},{n}.50" for n in range(1, records + 1)]
    lines[BAD_AT - 1] = f"{BAD_AT},item {BAD_AT},lots"
    return "\n".join(lines) + "\n"


@pytest.fixture
def bad_file(spark: SparkSession, lake: LakeSession, tmp_path: Path) -> LakeSession:
    """Volume v holding big.csv (10,000 records, the 5,000th bad) and good.csv (2 records)."""
    volume = local_volume(lake, tmp_path / "incoming")
    put(volume, "big.csv", csv_with_one_bad_record())
    put(volume, "good.csv", "1,a,1.00\n2,b,2.00\n")
    for table in ("cont", "pct", "skip", "abort"):
        lake.sql(f"CREATE TABLE {table} (id BIGINT, name STRING, amount DECIMAL(10,2))")
    return lake


def test_each_error_mode_on_a_file_with_one_bad_record(
    bad_file: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = bad_file
    # Validation first: it writes and records nothing.
    validate = "COPY INTO skip FROM VOLUME v USING CSV VALIDATION_MODE = "
    [(path, number, column, error, raw)] = rows(lake, validate + "RETURN_ERRORS")
    assert (path.endswith("/big.csv"), number, column, raw) == (
        True, BAD_AT, "amount", f"{BAD_AT},item {BAD_AT},lots",
    )  # fmt: skip
    assert rows(lake, validate + "RETURN_2_ROWS") == [
        (1, "item 1", Decimal("1.50")), (2, "item 2", Decimal("2.50")),
    ]  # fmt: skip
    assert refused(lake, validate + f"RETURN_{BAD_AT}_ROWS") == (
        f"record {BAD_AT} of {path} would not load: column amount: 'lots' is not a valid "
        "DECIMAL(10,2) — fix the file, or see every such record with VALIDATION_MODE = "
        "RETURN_ERRORS"
    )
    assert rows(lake, "SELECT COUNT(*) FROM load_history('skip')") == [(0,)]

    crash_at(monkeypatch, AFTER_COMMIT)
    with pytest.raises(Crash):  # the rows and their rejected record committed, not indexed
        lake.sql(COPY.format(table="cont", file="big.csv", mode="CONTINUE"))
    monkeypatch.undo()
    again = COPY.format(table="cont", file="big.csv", mode="CONTINUE")
    assert message(lake, again) == "COPY: 0 files loaded (0 rows), 0 failed, 0 purged"
    [(path, number, column, error, raw, pipe, version)] = rows(
        lake, "SELECT * FROM rejected_rows('cont')"
    )
    assert path.endswith("/big.csv")
    assert (number, column, raw, pipe, version) == (
        BAD_AT, "amount", f"{BAD_AT},item {BAD_AT},lots", None, 1,
    )  # fmt: skip
    assert error == "column amount: 'lots' is not a valid DECIMAL(10,2)"
    assert rows(lake, "SELECT status, rows_loaded, rows_rejected FROM load_history('cont')") == [
        ("PARTIALLY_LOADED", 9_999, 1)
    ]
    assert rows(lake, "SELECT COUNT(*), SUM(id) FROM cont") == [(9_999, 50_005_000 - BAD_AT)]

    percent = COPY.format(table="pct", file="big.csv", mode="'SKIP_FILE_1%'")
    assert message(lake, percent) == (
        "COPY: 1 files loaded (9999 rows, 1 rejected), 0 failed, 0 purged; pct is at version 1"
    )
    skip = COPY.format(table="skip", file="big.csv", mode="SKIP_FILE")
    assert message(lake, skip) == "COPY: 0 files loaded (0 rows), 1 failed, 0 purged"
    assert rows(lake, "SELECT status, first_error_message FROM load_history('skip')") == [
        ("LOAD_FAILED", "column amount: 'lots' is not a valid DECIMAL(10,2)")
    ]

    both = "COPY INTO abort FROM VOLUME v USING CSV ON_ERROR = ABORT_STATEMENT"
    assert refused(lake, both).startswith("COPY INTO abort stopped at file:")
    assert "nothing was loaded (1 of 2 files have records that do not fit" in refused(lake, both)
    assert rows(lake, "SELECT COUNT(*) FROM load_history('abort')") == [(0,)]
    assert rows(lake, "SELECT COUNT(*) FROM abort") == [(0,)]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (
            "USING CSV MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE",
            "MATCH_BY_COLUMN_NAME reads a CSV file's column names from its header — add "
            "OPTIONS('header' = 'true'), or drop MATCH_BY_COLUMN_NAME",
        ),
        (
            "(id BIGINT) USING JSON MATCH_BY_COLUMN_NAME = CASE_SENSITIVE",
            "MATCH_BY_COLUMN_NAME takes the columns from the files; the COPY also lists them — "
            "drop the column list after FROM VOLUME v, or MATCH_BY_COLUMN_NAME",
        ),
        (
            "USING PARQUET MATCH_BY_COLUMN_NAME = CASE_SENSITIVE",
            "PARQUET files are matched to the table's columns in any case — write "
            "MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE",
        ),
        (
            "USING JSON MATCH_BY_COLUMN_NAME = YES",
            "MATCH_BY_COLUMN_NAME = YES is not a way to match columns — write "
            "MATCH_BY_COLUMN_NAME = CASE_SENSITIVE | CASE_INSENSITIVE | NONE",
        ),
    ],
)
def test_matching_by_name_needs_names(options: str, error: str) -> None:
    with pytest.raises(LakeError) as caught:
        copy_of(f"COPY INTO t FROM VOLUME v {options}")
    assert str(caught.value) == error
