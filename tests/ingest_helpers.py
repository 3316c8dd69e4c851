"""Helpers for ingestion tests: local volumes, files with chosen ages, results as plain tuples."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.session import LakeSession

# Files younger than planning.SETTLE_SECONDS are left for the next look ("half-uploaded"), so test
# files are dated this many seconds back instead of making the tests sleep.
SETTLED = 10.0

SALES_SOURCE = """
CREATE TABLE IF NOT EXISTS sales_source (
    id BIGINT COMMENT 'Order ID', product STRING COMMENT 'Product name',
    category STRING COMMENT 'Category', amount DECIMAL(10,2) COMMENT 'Amount',
    dt STRING COMMENT 'Date'
) COMMENT 'Data lake acceleration test source table';
INSERT INTO sales_source VALUES
    (1, 'iPhone 15', 'Electronics', 8999.00, '2026-06-01'),
    (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'),
    (3, 'AirPods', 'Electronics', 1299.00, '2026-06-01'),
    (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'),
    (5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01');
"""
SALES_ROWS = [
    (1, "iPhone 15", "Electronics", Decimal("8999.00"), "2026-06-01"),
    (2, "MacBook Pro", "Electronics", Decimal("14999.00"), "2026-06-01"),
    (3, "AirPods", "Electronics", Decimal("1299.00"), "2026-06-01"),
    (4, "Nike Air Max", "Sports", Decimal("899.00"), "2026-06-01"),
    (5, "Yoga Mat", "Sports", Decimal("199.00"), "2026-06-01"),
]
SALES_COLUMNS = (
    "id BIGINT COMMENT 'Order ID', product STRING COMMENT 'Product name', "
    "category STRING COMMENT 'Category', amount DECIMAL(10,2) COMMENT 'Amount', "
    "dt STRING COMMENT 'Date'"
)


def age(path: Path, seconds: float = SETTLED) -> Path:
    """Date a file `seconds` back; a negative age dates it ahead, as a file still being written."""
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))
    return path


def put(directory: Path, name: str, content: str | bytes, seconds: float = SETTLED) -> Path:
    """Write a file into a volume's directory, dated `seconds` back (settled by default)."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return age(path, seconds)


def age_all(directory: Path, seconds: float = SETTLED) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            age(path, seconds)


def files(directory: Path) -> list[str]:
    """Every file under `directory`, hidden ones included, as sorted relative paths."""
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def local_volume(
    lake: LakeSession,
    directory: Path,
    name: str = "v",
    connection: str = "c",
    auto_refresh: bool = True,
) -> Path:
    """A LOCAL connection (if new) and an external volume on `directory`, with a directory table."""
    directory.mkdir(parents=True, exist_ok=True)
    refresh = "TRUE" if auto_refresh else "FALSE"
    lake.sql(
        f"CREATE STORAGE CONNECTION IF NOT EXISTS {connection} TYPE LOCAL;"
        f"CREATE EXTERNAL VOLUME {name} LOCATION '{directory.as_uri()}/' "
        f"USING CONNECTION {connection} DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = {refresh}) "
        "RECURSIVE = TRUE"
    )
    return directory


def rows(lake: LakeSession, sql: str) -> list[tuple]:
    (result,) = lake.sql(sql)
    return [tuple(row) for row in result.rows]


def message(lake: LakeSession, sql: str) -> str:
    (result,) = lake.sql(sql)
    return result.message


def refused(lake: LakeSession, sql: str) -> str:
    """The one-line LakeError a statement fails with."""
    with pytest.raises(LakeError) as caught:
        lake.sql(sql)
    text = str(caught.value)
    assert "\n" not in text
    return text


def properties(lake: LakeSession, sql: str) -> dict[str, object]:
    """A DESC statement's (property, value) rows as a dict."""
    return dict(rows(lake, sql))


def mtime(path: Path) -> str:
    """A file's modification time as the load records keep it."""
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat()
