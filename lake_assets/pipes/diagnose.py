"""Say what is wrong with the first malformed record of a file: which column, which value."""

from __future__ import annotations

import csv
import json
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from lake_assets.core.entries import Column
from lake_assets.volumes.grammar import VolumeSource

_INTEGER_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def _fits(value: str, column_type: str) -> bool:
    kind = column_type.split("(")[0]
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
            date.fromisoformat(value)
        elif kind.startswith("TIMESTAMP"):
            datetime.fromisoformat(value)
        elif kind in ("VARCHAR", "CHAR"):
            return len(value) <= int(column_type.split("(")[1].rstrip(")"))
    except (ValueError, InvalidOperation):
        return False
    return True


def first_problem(source: VolumeSource, columns: tuple[Column, ...], record: str | None) -> str:
    """One sentence naming the column that does not fit, or the record that is malformed."""
    shown = (record or "")[:200]
    if source.file_format == "PARQUET":
        return record or "the file does not fit the table"
    if source.file_format == "JSON":
        try:
            json.loads(record or "")
        except ValueError:
            return f"malformed JSON record: {shown}"
        return f"a JSON value does not fit the table's column types: {shown}"
    separator = source.options.get("sep") or source.options.get("delimiter") or ","
    fields = next(csv.reader([record or ""], delimiter=separator), [])
    if len(fields) != len(columns):
        return f"the row has {len(fields)} fields but the table has {len(columns)} columns: {shown}"
    for column, value in zip(columns, fields, strict=True):
        if value and not _fits(value, column.type):
            return f"column {column.name}: '{value[:60]}' is not a valid {column.type}"
    return f"malformed CSV row: {shown}"
