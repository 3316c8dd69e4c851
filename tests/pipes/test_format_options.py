"""COPY's file-format options: skip_header, NULL_IF, DATE_FORMAT, TIMESTAMP_FORMAT, ENCODING and
MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE for JSON. Their grammar and translations are proved
without Spark; on real Spark + Delta, a CSV with a preamble and listed NULLs loads with its one bad
record rejected at its line, a Latin-1 file with day-first dates loads, and JSON keys in another
case load by name."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement
from lake_assets.pipes.copy_grammar import copy_of
from lake_assets.pipes.copy_options import ColumnMatch
from lake_assets.pipes.diagnose import first_problem
from lake_assets.pipes.file_formats import FormatOptions, datetime_format, java_charset
from lake_assets.session import LakeSession
from tests.ingest_helpers import local_volume, message, put, rows

COPY = "COPY INTO t FROM VOLUME v USING {using} {options}"


def formats(using: str, options: str = "") -> FormatOptions:
    return copy_of(COPY.format(using=using, options=options)).source.formats


def refusal(using: str, options: str = "") -> str:
    with pytest.raises(LakeError) as caught:
        copy_of(COPY.format(using=using, options=options))
    text = str(caught.value)
    assert "\n" not in text
    return text


def test_format_options_parse_in_any_order_on_a_copy_and_a_pipe() -> None:
    options = (
        "ENCODING = 'latin1' NULL_IF = ('NULL', '\\\\N', '') ON_ERROR = CONTINUE "
        "DATE_FORMAT = 'DD/MM/YYYY' TIMESTAMP_FORMAT = 'YYYY-MM-DD\"T\"HH24:MI:SS.FF3 TZH:TZM'"
    )
    copy = copy_of(
        COPY.format(using="CSV OPTIONS('skip_header' = '2', 'sep' = ';')", options=options)
    )
    found = copy.source.formats
    assert (found.skip_header, found.null_if, found.encoding) == (
        2,
        ("NULL", "\\N", ""),
        "ISO-8859-1",
    )
    assert copy.source.options == {
        "sep": ";",
        "encoding": "ISO-8859-1",
        "dateformat": "dd/MM/yyyy",
        "timestampformat": "yyyy-MM-dd'T'HH:mm:ss.SSS XXX",
    }  # skip_header is the COPY's, not Spark's; an offset is no TIMESTAMP_NTZ's
    pipe = parse_statement(
        "CREATE PIPE p AS COPY INTO t FROM VOLUME v USING JSON NULL_IF = () "
        "MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ENCODING = UTF8"
    )
    assert pipe.copy.source.formats == FormatOptions(encoding="UTF-8")
    assert pipe.copy.match_by_name == ColumnMatch.CASE_INSENSITIVE
    assert formats("CSV", "DATE_FORMAT = 'AUTO'") == FormatOptions()


@pytest.mark.parametrize(
    ("text", "pattern", "python"),
    [
        ("DD/MM/YYYY", "dd/MM/yyyy", "%d/%m/%Y"),
        ("dd-mon-yy", "dd-MMM-yy", "%d-%b-%y"),
        ("YYYY-MM-DD HH12:MI:SS AM", "yyyy-MM-dd hh:mm:ss a", "%Y-%m-%d %I:%M:%S %p"),
        ("HH:MI:SS.FF6", "hh:mm:ss.SSSSSS", "%I:%M:%S.%f"),
        ('YYYY"w"MM TZHTZM', "yyyy'w'MM XX", "%Yw%m %z"),
    ],
)
def test_snowflake_datetime_tokens_become_spark_patterns(
    text: str, pattern: str, python: str
) -> None:
    found = datetime_format("DATE_FORMAT", text)
    assert found is not None
    assert (found.spark, found.python) == (pattern, python)


@pytest.mark.parametrize(
    ("using", "options", "error"),
    [
        (
            "CSV",
            "DATE_FORMAT = 'YYYY-MM-DDTHH24'",
            "DATE_FORMAT = 'YYYY-MM-DDTHH24': THH24 is not a supported format token — use "
            "YYYY YY MM MON DD HH24 HH12 HH MI SS FF FF1…FF9 AM PM TZH:TZM TZHTZM TZH, and put "
            'other text in double quotes ("T")',
        ),
        (
            "CSV",
            "TIMESTAMP_FORMAT = 'DY YYYY'",
            "TIMESTAMP_FORMAT = 'DY YYYY': DY is not a supported format token — use YYYY YY MM "
            "MON DD HH24 HH12 HH MI SS FF FF1…FF9 AM PM TZH:TZM TZHTZM TZH, and put other text "
            'in double quotes ("T")',
        ),
        (
            "CSV",
            "ENCODING = 'EBCDIC'",
            "ENCODING = 'EBCDIC' is not a supported encoding — use UTF8, LATIN1, ISO-8859-1…9, "
            "WINDOWS-1250…1255, UTF-16/32[BE|LE], BIG5, EUC-JP, EUC-KR, GB18030, KOI8-R, "
            "SHIFT_JIS",
        ),
        (
            "CSV OPTIONS('skip_header' = '-1')",
            "",
            "OPTIONS('skip_header' = '-1') is not a number of lines — write "
            "OPTIONS('skip_header' = 'n') with n a whole number, 0 or more",
        ),
        (
            "CSV OPTIONS('skip_header' = '1', 'header' = 'true')",
            "",
            "OPTIONS('skip_header') skips lines, 'header' = 'true' reads the first as the names "
            "— keep one of them: skip_header for lines to drop, header for a header to match by",
        ),
        (
            "JSON OPTIONS('skip_header' = '1')",
            "",
            "OPTIONS('skip_header') is for CSV files, not JSON — drop skip_header",
        ),
        (
            "PARQUET",
            "NULL_IF = ('NA')",
            "NULL_IF, DATE_FORMAT, TIMESTAMP_FORMAT and ENCODING are for CSV and JSON files; "
            "Parquet files carry their types — drop them from the COPY",
        ),
    ],
)
def test_bad_format_options_are_refused_in_one_line(using: str, options: str, error: str) -> None:
    assert refusal(using, options) == error


def test_encoding_names_map_to_java_charsets() -> None:
    names = [
        "UTF8",
        "utf-8",
        "LATIN1",
        "ISO-8859-1",
        "iso88591",
        "UTF-16",
        "UTF16LE",
        "windows-1252",
    ]
    assert [java_charset(name) for name in names] == [
        "UTF-8", "UTF-8", "ISO-8859-1", "ISO-8859-1", "ISO-8859-1", "UTF-16", "UTF-16LE",
        "windows-1252",
    ]  # fmt: skip


def test_a_rejected_records_diagnosis_takes_the_format_options() -> None:
    copy = copy_of(
        "COPY INTO t FROM VOLUME v (id INT, day DATE) USING CSV NULL_IF = ('NA') "
        "DATE_FORMAT = 'DD/MM/YYYY'"
    )
    table = copy.source.columns or ()
    assert first_problem(copy.source, table, "NA,x") == "column day: 'x' is not a valid DATE"
    assert first_problem(copy.source, table, "y,25/12/2026") == "column id: 'y' is not a valid INT"


def test_skipped_lines_and_listed_nulls_in_a_csv(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    put(volume, "a.csv", "Sales export\nrun,2026-12-06\n1,NA,x\nNA,2,\\N\n3,lots,y\n4,,\n")
    lake.sql("CREATE TABLE t (id INT, amount INT, note STRING)")
    copy = (
        "COPY INTO t FROM VOLUME v USING CSV OPTIONS('skip_header' = '2') "
        "NULL_IF = ('NA', '\\\\N') ON_ERROR = CONTINUE"
    )
    assert message(lake, copy) == (
        "COPY: 1 files loaded (3 rows, 1 rejected), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, amount, note FROM t ORDER BY id NULLS FIRST") == [
        (None, 2, None), (1, None, "x"), (4, None, None),
    ]  # fmt: skip
    [(number, column, error, raw)] = rows(
        lake, "SELECT row_number, column_name, error, raw_record FROM rejected_rows('t')"
    )
    # The number is the record's line in the file, the two skipped lines counted.
    assert (number, column, error, raw) == (
        5, "amount", "column amount: 'lots' is not a valid INT", "3,lots,y",
    )  # fmt: skip


def test_a_latin1_file_with_day_first_dates(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    put(volume, "a.csv", "1,Zoë,25/12/2026,07/01/2026 01:30:00 PM\n".encode("iso-8859-1"))
    lake.sql("CREATE TABLE t (id INT, name STRING, day DATE, at TIMESTAMP_NTZ)")
    copy = (
        "COPY INTO t FROM VOLUME v USING CSV DATE_FORMAT = 'DD/MM/YYYY' "
        "TIMESTAMP_FORMAT = 'DD/MM/YYYY HH12:MI:SS AM' ENCODING = 'ISO-8859-1'"
    )
    assert message(lake, copy) == (
        "COPY: 1 files loaded (1 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name, day, CAST(at AS STRING) FROM t") == [
        (1, "Zoë", date(2026, 12, 25), "2026-01-07 13:30:00")
    ]


def test_json_keys_in_another_case_load_by_name(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    put(volume, "a.json", '{"ID": 1, "Name": "a"}\n')
    put(volume, "b.json", '{"name": "b", "Id": 2, "extra": true}\n{"Id": 3}\n')
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    copy = "COPY INTO t FROM VOLUME v USING JSON MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE"
    assert message(lake, copy) == (
        "COPY: 2 files loaded (3 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [(1, "a"), (2, "b"), (3, None)]
