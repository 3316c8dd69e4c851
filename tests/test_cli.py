"""The `lake` command as users run it: separate processes sharing one LAKE_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.tables.entry import TableEntry

# Each test starts a process of its own: not a unit test (see tests/conftest.py).
pytestmark = pytest.mark.slow

SALES_SOURCE_SQL = Path(__file__).parent / "data" / "sales_source.sql"


def lake(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LAKE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "lake_assets.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.fixture(scope="module")
def sales_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LAKE_HOME where one `lake sql -f` call created and filled sales_source."""
    home = tmp_path_factory.mktemp("lake")
    created = lake(home, "sql", "-f", str(SALES_SOURCE_SQL))
    assert created.returncode == 0, created.stderr
    assert created.stderr == ""
    assert (
        "INSERT: 5 inserted, 0 updated, 0 deleted; sales_source is at version 1" in created.stdout
    )
    return home


def test_a_table_created_by_one_call_is_queried_by_the_next_as_json(sales_home: Path) -> None:
    queried = lake(
        sales_home, "sql", "--format", "json", "-e", "SELECT * FROM sales_source ORDER BY id"
    )
    assert queried.returncode == 0, queried.stderr
    rows = [json.loads(line, parse_float=Decimal) for line in queried.stdout.splitlines()]
    assert rows == [
        {"id": 1, "product": "iPhone 15", "category": "Electronics",
         "amount": Decimal("8999.00"), "dt": "2026-06-01"},
        {"id": 2, "product": "MacBook Pro", "category": "Electronics",
         "amount": Decimal("14999.00"), "dt": "2026-06-01"},
        {"id": 3, "product": "AirPods", "category": "Electronics",
         "amount": Decimal("1299.00"), "dt": "2026-06-01"},
        {"id": 4, "product": "Nike Air Max", "category": "Sports",
         "amount": Decimal("899.00"), "dt": "2026-06-01"},
        {"id": 5, "product": "Yoga Mat", "category": "Sports",
         "amount": Decimal("199.00"), "dt": "2026-06-01"},
    ]  # fmt: skip


def test_a_type_mismatch_is_one_error_line_and_no_commit(sales_home: Path) -> None:
    failed = lake(
        sales_home, "sql", "-e",
        "INSERT INTO sales_source VALUES ('seven', 'x', 'y', 1.00, '2026-06-02')",
    )  # fmt: skip
    assert failed.returncode == 1
    assert failed.stdout == ""
    (line,) = failed.stderr.splitlines()
    assert line.startswith("error: statement 1: [CAST_INVALID_INPUT] The value 'seven'")
    assert line.endswith("— make the value fit the column's type (DESC TABLE shows it) or CAST it")
    table = Catalog(sales_home / "catalog.db").get(TableEntry, "sales_source")
    assert (table.version, table.row_count) == (1, 5)
    assert sorted(p.name for p in (Path(table.location) / "_delta_log").glob("*.json")) == [
        "00000000000000000000.json",
        "00000000000000000001.json",
    ]


def test_show_tables_reads_the_catalog_without_spark(sales_home: Path) -> None:
    shown = lake(sales_home, "sql", "--format", "csv", "-e", "SHOW TABLES")
    assert shown.returncode == 0, shown.stderr
    header, row = shown.stdout.splitlines()
    assert header == (
        "name,kind,change_tracking,schema_evolution,rescued_data_column,rows,version,comment,"
        "created_at,expectations"
    )
    assert row.startswith(
        "sales_source,TABLE,false,false,,5,1,Data lake acceleration test source table,"
    )


def test_bad_sql_exits_1_with_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    failed = lake(tmp_path, "sql", "-e", "CREATE TABLE t (id INT); INSERT INTO t VALUES (1")
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr == (
        "error: statement 2: syntax error at line 1: Expecting ) — correct the SQL near '1'\n"
    )
    assert Catalog(tmp_path / "catalog.db").entries(TableEntry) == []
    assert not (tmp_path / "warehouse").exists()


def test_unknown_table_is_reported_without_starting_spark(tmp_path: Path) -> None:
    failed = lake(tmp_path, "sql", "-e", "SELECT * FROM nowhere")
    assert failed.returncode == 1
    assert failed.stderr == (
        "error: statement 1: table nowhere does not exist — "
        "check the name with SHOW TABLES or create it with CREATE TABLE\n"
    )
    assert not (tmp_path / "logs").exists()


def test_unsupported_statement_says_so(tmp_path: Path) -> None:
    failed = lake(tmp_path, "sql", "-e", "CREATE MATERIALIZED VIEW v AS SELECT 1")
    assert failed.returncode == 1
    assert failed.stderr.startswith(
        "error: statement 1: not supported yet: CREATE MATERIALIZED VIEW …"
    )


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    failed = lake(tmp_path, "sql", "--debug", "-e", "DROP TABLE nowhere")
    assert failed.returncode == 1
    assert "Traceback (most recent call last)" in failed.stderr
    assert failed.stderr.splitlines()[-1] == (
        "error: statement 1: table nowhere does not exist — "
        "check the name with SHOW TABLES or create it with CREATE TABLE"
    )


def test_a_missing_script_file_is_one_line(tmp_path: Path) -> None:
    failed = lake(tmp_path, "sql", "-f", str(tmp_path / "missing.sql"))
    assert failed.returncode == 1
    assert failed.stderr.startswith(f"error: cannot read {tmp_path / 'missing.sql'}:")
    assert len(failed.stderr.splitlines()) == 1


def test_an_error_shows_control_characters_as_escapes_and_no_secret(tmp_path: Path) -> None:
    script = tmp_path / "hostile.sql"
    script.write_text(
        "CREATE STORAGE CONNECTION c TYPE S3 ACCESS_KEY = 'k-3f9a\x1b[2J\x00' NONSENSE;\n"
        "SELECT 'never closed\x1b]0;title\x07",
        encoding="utf-8",
    )
    failed = lake(tmp_path, "sql", "-f", str(script))
    assert failed.returncode == 1
    assert len(failed.stderr.splitlines()) == 1
    assert not set(failed.stderr) & {"\x1b", "\x00", "\x07"}
    assert "never closed\\x1b]0;title" in failed.stderr
    assert "k-3f9a" not in failed.stderr
