"""Render results for the terminal (aligned table), JSON Lines, or CSV."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

from lake_assets.core.rendering import visible
from lake_assets.core.results import Result

FORMATS = ("table", "json", "csv")


def _text(value: Any, null: str) -> str:
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return str(value)


def _json(value: Any) -> str:
    """Strict JSON: exact decimals, ISO times, and NaN/Infinity as strings (JSON has none)."""
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else json.dumps(str(value))
    if isinstance(value, datetime | date):
        return json.dumps(value.isoformat())
    if isinstance(value, bytes | bytearray):
        return json.dumps(value.hex())
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_json(item) for item in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(str(value))
    if value is None or isinstance(value, bool | int | float | str):
        return json.dumps(value)
    return json.dumps(str(value))


def _write_table(columns: list[str], rows: list[Sequence[Any]], out: TextIO) -> None:
    columns = [visible(name) for name in columns]
    cells = [[visible(_text(value, "NULL")) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(columns)]
    out.write(
        " | ".join(name.ljust(width) for name, width in zip(columns, widths, strict=True)).rstrip()
        + "\n"
    )
    out.write("-+-".join("-" * width for width in widths) + "\n")
    for row in cells:
        out.write(
            " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            + "\n"
        )
    out.write(f"({len(cells)} row{'' if len(cells) == 1 else 's'})\n")


def write_result(result: Result, fmt: str, out: TextIO) -> None:
    """Result sets in every format; status messages only in the human `table` format."""
    if fmt == "table":
        if result.columns:
            _write_table(result.columns, list(result.rows), out)
        if result.message:
            out.write(visible(result.message) + "\n")
    elif fmt == "json":
        for row in result.rows:
            fields = (
                f"{json.dumps(name)}:{_json(value)}"
                for name, value in zip(result.columns, row, strict=True)
            )
            out.write("{" + ",".join(fields) + "}\n")
    elif fmt == "csv" and result.columns:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([_text(value, "") for value in row] for row in result.rows)
    out.flush()
