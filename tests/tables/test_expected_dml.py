"""Expectations on real Spark + Delta: WARN, DROP ROW and FAIL across INSERT, UPDATE and COPY,
the quarantine, the counts each commit carries, DESC and ADD / DROP CONSTRAINT."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from lake_assets.core.commits import STATEMENT_MARKER, decode
from lake_assets.core.delta import history
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import local_volume, message, put, refused, rows

ORDERS = """
CREATE TABLE orders (id BIGINT, amount DECIMAL(10,2),
    CONSTRAINT valid_amount EXPECT (amount > 0) ON VIOLATION DROP ROW,
    CONSTRAINT has_id EXPECT (id IS NOT NULL) ON VIOLATION FAIL,
    CONSTRAINT small EXPECT (amount < 1000))
"""


def counts(lake: LakeSession, version: int) -> dict[str, list[int]]:
    """The expectation counts the commit at `version` carries."""
    location = lake.catalog.get(TableEntry, "orders").location
    commit = next(c for c in history(None, location) if c.version == version)
    record = decode(commit.user_metadata, STATEMENT_MARKER) or json.loads(commit.user_metadata)
    return record["expectations"]


def test_each_write_judges_its_rows_and_keeps_the_dropped_ones_aside(
    lake: LakeSession, tmp_path: Path
) -> None:
    lake.sql(ORDERS)
    assert message(lake, "INSERT INTO orders VALUES (1, 10), (2, -5), (3, 5000), (4, NULL)") == (
        "INSERT: 3 inserted, 0 updated, 0 deleted; orders is at version 1 with 3 rows"
    )
    # NULL passes (amount NULL: both amount conditions are NULL); -5 is dropped, 5000 warned.
    assert counts(lake, 1) == {"valid_amount": [3, 1], "has_id": [4, 0], "small": [3, 1]}
    assert rows(lake, "SELECT id, amount FROM orders ORDER BY id") == [
        (1, Decimal("10.00")), (3, Decimal("5000.00")), (4, None),
    ]  # fmt: skip

    error = refused(lake, "INSERT INTO orders (amount) SELECT 7")
    assert "violates expectation has_id (id IS NOT NULL, ON VIOLATION FAIL) in 1 of 1" in error
    assert "e.g. (id=None, amount=Decimal('7.00')); nothing was written" in error
    assert lake.catalog.get(TableEntry, "orders").version == 1

    # An UPDATE whose new values fail DROP ROW leaves the row as it was; the new values go aside.
    assert message(lake, "UPDATE orders SET amount = amount - 20 WHERE id IN (1, 3)") == (
        "UPDATE: 0 inserted, 1 updated, 0 deleted; orders is at version 2 with 3 rows"
    )
    assert counts(lake, 2) == {"valid_amount": [1, 1], "has_id": [2, 0], "small": [1, 1]}
    assert rows(lake, "SELECT id, amount FROM orders ORDER BY id") == [
        (1, Decimal("10.00")), (3, Decimal("4980.00")), (4, None),
    ]  # fmt: skip

    volume = local_volume(lake, tmp_path / "incoming")
    put(volume, "a.csv", "5,1.50\n6,-2.00\n")
    assert message(lake, "COPY INTO orders FROM VOLUME v USING CSV") == (
        "COPY: 1 files loaded (2 rows), 0 failed, 0 purged; orders is at version 3"
    )
    assert rows(lake, "SELECT COUNT(*) FROM orders") == [(4,)]
    assert lake.catalog.get(TableEntry, "orders").row_count == 4

    # A MERGE row dropped by its clause takes no other: id 1 is neither updated nor deleted.
    assert (
        message(
            lake,
            "MERGE INTO orders AS o USING (SELECT 1 AS id, -1.00 AS amount UNION ALL "
            "SELECT 5, 2.00 UNION ALL SELECT 7, 3.00 UNION ALL SELECT 8, -4.00) AS s "
            "ON o.id = s.id WHEN MATCHED AND s.amount < 0 THEN UPDATE SET amount = s.amount "
            "WHEN MATCHED THEN DELETE "
            "WHEN NOT MATCHED THEN INSERT (id, amount) VALUES (s.id, s.amount)",
        )
        == "MERGE: 1 inserted, 0 updated, 1 deleted; orders is at version 4 with 4 rows"
    )
    assert counts(lake, 4) == {"valid_amount": [1, 2], "has_id": [3, 0], "small": [3, 0]}
    assert rows(lake, "SELECT id FROM orders ORDER BY id") == [(1,), (3,), (4,), (7,)]
    assert rows(
        lake,
        "SELECT id, amount, expectation, commit_version FROM quarantined_rows('orders') "
        "ORDER BY commit_version, id",
    ) == [
        (2, Decimal("-5.00"), "valid_amount", 1),
        (1, Decimal("-10.00"), "valid_amount", 2),
        (6, Decimal("-2.00"), "valid_amount", 3),
        (1, Decimal("-1.00"), "valid_amount", 4),
        (8, Decimal("-4.00"), "valid_amount", 4),
    ]


def test_constraints_are_shown_added_and_dropped_and_hold_their_columns(
    lake: LakeSession,
) -> None:
    lake.sql(ORDERS + "; INSERT INTO orders VALUES (1, 10), (2, 2000)")
    assert rows(lake, "DESC TABLE orders")[2:] == [
        ("CONSTRAINT valid_amount", "EXPECT (amount > 0) ON VIOLATION DROP ROW", None, None, None),
        ("CONSTRAINT has_id", "EXPECT (id IS NOT NULL) ON VIOLATION FAIL", None, None, None),
        ("CONSTRAINT small", "EXPECT (amount < 1000) ON VIOLATION WARN", None, None, None),
    ]  # fmt: skip
    assert rows(lake, "SHOW TABLES")[0][-1] == "valid_amount, has_id, small"
    assert refused(lake, "ALTER TABLE orders DROP COLUMN amount").startswith(
        "expectation valid_amount of table orders reads column amount"
    )
    assert "is not a condition: (amount + 1) is DECIMAL(11,2)" in refused(
        lake, "ALTER TABLE orders ADD CONSTRAINT bad EXPECT (amount + 1)"
    )
    assert message(lake, "ALTER TABLE orders ADD CONSTRAINT tiny EXPECT (amount < 100)") == (
        "table orders expects tiny: EXPECT (amount < 100) ON VIOLATION WARN, on writes from "
        "now on; 1 rows already in it fail it and are left as they are"
    )
    assert message(lake, "ALTER TABLE orders DROP CONSTRAINT VALID_AMOUNT") == (
        "table orders no longer expects VALID_AMOUNT"
    )
    names = [e.name for e in lake.catalog.get(TableEntry, "orders").expectations]
    assert names == ["has_id", "small", "tiny"]


def test_a_consumer_merge_judges_the_stream_changes_it_applies(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE src (id BIGINT, age INT); INSERT INTO src VALUES (1, 30), (2, 10);"
        "CREATE TABLE STREAM s ON TABLE src; UPDATE src SET age = age - 10;"
        "CREATE TABLE dst (id BIGINT, age INT, "
        "CONSTRAINT adult EXPECT (age >= 18) ON VIOLATION DROP ROW);"
        "INSERT INTO dst VALUES (1, 30), (2, 20)"
    )
    # A clause per change type: the UPDATE_BEFORE rows, which no clause takes, go first.
    assert (
        message(
            lake,
            "MERGE INTO dst target USING s source ON target.id = source.id "
            "WHEN MATCHED AND source.__change_type = 'UPDATE_AFTER' THEN UPDATE SET target.age = "
            "source.age WHEN MATCHED AND source.__change_type = 'DELETE' THEN DELETE "
            "WHEN NOT MATCHED AND source.__change_type = 'INSERT' THEN INSERT VALUES (source.id, "
            "source.age)",
        )
        == "MERGE: 0 inserted, 1 updated, 0 deleted; dst is at version 2 with 2 rows"
    )
    assert rows(lake, "SELECT id, age FROM dst ORDER BY id") == [(1, 20), (2, 20)]
    assert rows(lake, "SELECT id, age, expectation FROM quarantined_rows('dst')") == [
        (2, 0, "adult")
    ]
    assert rows(lake, "SELECT COUNT(*) FROM s") == [(0,)]  # consumed with the MERGE's commit
