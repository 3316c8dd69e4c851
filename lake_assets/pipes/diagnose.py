"""Say what is wrong with a file: its first malformed record (which column, which value), or
why Spark could not read it."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from lake_assets.core.entries import Column
from lake_assets.core.spark_errors import translate_spark_error
from lake_assets.pipes.file_formats import DatetimeFormat, FormatOptions, formats_of
from lake_assets.volumes.files import format_options
from lake_assets.volumes.grammar import VolumeSource

_INTEGER_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+;?")
# What Spark says when one file cannot be read (cut short, not of its format, a name Hadoop cannot
# take) or its values cannot be made to fit the table's columns.
_FILE_FAULTS = (
    "FAILED_READ_FILE",
    "CAST_INVALID_INPUT",
    "CAST_OVERFLOW",
    "NUMERIC_VALUE_OUT_OF_RANGE",
    "DATATYPE_MISMATCH",
    "URISyntaxException",
)
# ... unless the store was out of reach: then no file is to blame.
_REACH_FAULTS = (
    "NoAuthWithAWSException",
    "NoAwsCredentialsException",
    "SdkClientException",
    "AWSClientIOException",
    "AccessDenied",
    "UnknownHostException",
    "ConnectException",
    "SocketException",
    "SocketTimeoutException",
)


def _fits(value: str, column_type: str, formats: FormatOptions) -> bool:
    """Whether Spark reads the value as the column's type (or NULL_IF lists it)."""
    kind = column_type.split("(")[0]
    if value in formats.null_if:
        return True
    try:
        if kind in _INTEGER_BITS:
            half = 2 ** (_INTEGER_BITS[kind] - 1)
            return -half <= int(value) < half
        elif kind == "DECIMAL":
            precision, scale = (int(x) for x in column_type[8:-1].split(","))
            number = Decimal(value)
            digits = len(number.quantize(Decimal(1).scaleb(-scale)).as_tuple().digits)
            return number.is_finite() and digits <= precision
        elif kind in ("DOUBLE", "FLOAT"):
            float(value)
        elif kind == "BOOLEAN":
            return value.lower() in ("true", "false")
        elif kind == "DATE":
            _as_datetime(value, formats.date_format, date.fromisoformat)
        elif kind.startswith("TIMESTAMP"):
            _as_datetime(value, formats.timestamp_format, datetime.fromisoformat)
        elif kind in ("VARCHAR", "CHAR"):
            return len(value) <= int(column_type.split("(")[1].rstrip(")"))
    except (ValueError, InvalidOperation):
        return False
    return True


def _as_datetime(
    value: str, form: DatetimeFormat | None, iso: Callable[[str], date | datetime]
) -> None:
    """Raise ValueError unless the value is in the format (ISO without one)."""
    if form is None:
        iso(value)
    else:
        datetime.strptime(value, form.python)


def first_problem(source: VolumeSource, columns: tuple[Column, ...], record: str | None) -> str:
    """One sentence naming the column that does not fit, or the record that is malformed."""
    return record_problem(source, columns, record)[1]


def record_problem(
    source: VolumeSource, columns: tuple[Column, ...], record: str | None
) -> tuple[str | None, str]:
    """The column that does not fit (None when the record is malformed as a whole), and one
    sentence saying so."""
    shown = (record or "")[:200]
    if source.file_format == "PARQUET":
        return None, record or "the file does not fit the table"
    if source.file_format == "JSON":
        return _json_problem(columns, record or "", shown, formats_of(source))
    options = format_options(source.file_format, source.options)
    column, problem = _csv_problem(options, columns, record or "", shown, formats_of(source))
    # Without multiLine, a line break inside a quoted value ends the row there: a quote is left
    # open in the row, or in the one the line break starts.
    unescaped = (record or "").replace(f'{options["escape"]}"', "")
    if unescaped.count('"') % 2 and options.get("multiline") != "true":
        return column, (
            f"{problem} (a quoted value that spans lines needs OPTIONS('multiLine' = 'true'))"
        )
    return column, problem


def _json_problem(
    columns: tuple[Column, ...], record: str, shown: str, formats: FormatOptions
) -> tuple[str | None, str]:
    try:
        values = json.loads(record)
    except ValueError:
        return None, f"malformed JSON record: {shown}"
    if isinstance(values, dict):
        found = {key.lower(): value for key, value in values.items()}
        for column in columns:
            value = found.get(column.name.lower())
            if isinstance(value, (str, int, float)) and not _fits(str(value), column.type, formats):
                return (
                    column.name,
                    f"column {column.name}: {json.dumps(value)[:60]} is not a valid {column.type}",
                )
    return None, f"a JSON value does not fit the table's column types: {shown}"


def _csv_problem(
    options: dict[str, str],
    columns: tuple[Column, ...],
    record: str,
    shown: str,
    formats: FormatOptions,
) -> tuple[str | None, str]:
    """The row split as Spark splits it (its separator and escape), so the count is Spark's."""
    separator = options.get("sep") or options.get("delimiter") or ","
    # Python's reader doubles quotes as the RFC does; OPTIONS('escape' = '\\') adds a backslash.
    escape = options["escape"]
    escapechar = escape if len(escape) == 1 and escape != '"' else None
    fields = next(csv.reader([record], delimiter=separator, escapechar=escapechar), [])
    if len(fields) != len(columns):
        return None, (
            f"the row has {len(fields)} fields but the table has {len(columns)} columns: {shown}"
        )
    for column, value in zip(columns, fields, strict=True):
        if value and not _fits(value, column.type, formats):
            return column.name, f"column {column.name}: '{value[:60]}' is not a valid {column.type}"
    return None, f"malformed CSV row: {shown}"


def unreadable(error: BaseException) -> str | None:
    """One line saying why Spark could not read a file or fit its values to the table, or None
    when the failure is not the file's (the store out of reach, credentials missing, the table
    gone): such a failure still fails the COPY, so that the file loads once it is fixed."""
    text = str(error)
    if not any(mark in text for mark in _FILE_FAULTS) or any(m in text for m in _REACH_FAULTS):
        return None
    found = translate_spark_error(error, {})
    line = found.what if found else text.strip().splitlines()[0]
    return _SQLSTATE.sub("", line)[:300]
