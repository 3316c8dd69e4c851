"""RESTORE TABLE on real Spark + Delta: the rows of a past version (and its columns) brought back
in one commit, what reads the table told, and a restore refused where a change of columns is."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.core.versions import Position
from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession
from lake_assets.tables.grammar import RestoreTable
from tests.ingest_helpers import message, refused, rows


def test_a_table_restored_with_its_rows_and_columns(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(8) COMMENT 'the a');"
        "INSERT INTO t VALUES (1, 'x');"  # version 1
        "CREATE DYNAMIC TABLE d AS SELECT COUNT(*) AS n FROM t;"
        "INSERT INTO t VALUES (2, 'y');"
        "ALTER TABLE t ADD COLUMN c INT;"
        "INSERT INTO t VALUES (3, 'z', 3)"
    )
    assert message(lake, "RESTORE TABLE t TO VERSION 1") == (
        "restored table t to version 1: it is at version 6 with 1 rows; restored the columns of "
        "version 1"
    )
    assert rows(lake, "SELECT * FROM t") == [(1, "x")]
    assert rows(lake, "DESC t") == [
        ("id", "INT", None, 1, None),
        ("a", "VARCHAR(8)", "the a", None, None),  # the catalog's spelling and comment kept
    ]
    assert "REFRESH FULL (t's columns changed at version 6 (restored the columns of version 1)" in (
        message(lake, "REFRESH DYNAMIC TABLE d")
    )
    assert rows(lake, "SELECT n FROM d") == [(1,)]
    assert [row[2] for row in rows(lake, "DESC HISTORY t")][:1] == ["RESTORE"]
    assert message(lake, "RESTORE t TO VERSION 6").endswith("nothing to restore")

    lake.sql("CREATE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')")
    assert refused(lake, "RESTORE TABLE t TO VERSION AS OF 5").startswith(
        "stream s reads table t's changes, which cannot be read across this change (restored "
        "the columns of version 5)"
    )
    assert message(lake, "RESTORE TABLE t TO VERSION 2").startswith(  # same columns: allowed
        "restored table t to version 2: it is at version 8 with 1 rows"
    )
    assert refused(lake, "RESTORE d TO VERSION 0").startswith(
        "d is a dynamic table: only a table is restored"
    )


def test_restore_names_a_version_or_a_time() -> None:
    assert parse_statement("RESTORE TABLE t TO VERSION AS OF 3") == RestoreTable(
        "t", Position(version=3)
    )
    assert parse_statement("RESTORE t TO TIMESTAMP '2026-12-01 10:00:00'") == RestoreTable(
        "t", Position(timestamp="2026-12-01 10:00:00")
    )
    with pytest.raises(LakeError, match="RESTORE \\[TABLE\\] name TO VERSION"):
        parse_statement("RESTORE TABLE t TO 3")
