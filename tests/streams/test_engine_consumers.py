"""Consuming writes move the offset, failed ones nothing; stale streams; a second consumer."""

from __future__ import annotations

import os
import socket
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.delta import session_conf
from lake_assets.session import LakeSession
from lake_assets.streams import offsets
from lake_assets.streams.entry import Claim, StreamEntry
from tests.ingest_helpers import refused
from tests.streams.stream_helpers import CONSUMER_MERGE, TABLE, changes, desc, latest, rows, tracked

CONSUMERS = {
    "insert": (
        "INSERT INTO tgt SELECT id, name, age FROM s WHERE __change_type = 'INSERT'",
        [(1, "a", 1), (2, "b", 2), (3, "c", 3)],
    ),
    "insert overwrite": (
        "INSERT OVERWRITE tgt SELECT id, name, age FROM s WHERE __change_type = 'INSERT'",
        [(3, "c", 3)],
    ),
    "merge": (
        CONSUMER_MERGE.format(target="tgt", stream="s"),
        [(1, "a", 1), (2, "b", 2), (3, "c", 3)],
    ),
    "update": (
        "UPDATE tgt SET age = -1 WHERE id IN (SELECT id - 1 FROM s)",
        [(1, "a", 1), (2, "b", -1)],
    ),
    "delete": ("DELETE FROM tgt WHERE id IN (SELECT id - 1 FROM s)", [(1, "a", 1)]),
    "delete not exists": (
        "DELETE FROM tgt WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.id = tgt.id + 1)",
        [(2, "b", 2)],
    ),
}


@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_a_consuming_write_moves_the_offset_to_the_version_it_read(
    lake: LakeSession, consumer: str
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql(
        "ALTER STREAM s SET OFFSET LATEST; CREATE TABLE tgt (id INT, name VARCHAR, age INT); "
        "INSERT INTO tgt SELECT * FROM t; INSERT INTO t VALUES (3, 'c', 3)"
    )
    read = latest(lake, "t")
    statement, expected = CONSUMERS[consumer]
    lake.sql(statement)
    assert rows(lake, "SELECT * FROM tgt") == expected
    described = desc(lake, "s")
    assert (described["offset_version"], described["pending_commits"]) == (read, 0)
    assert changes(lake, "s") == []


FAILING = {
    "merge cast error": CONSUMER_MERGE.format(target="tgt", stream="s").replace(
        "source_stream.age)", "CAST(source_stream.name AS INT))"
    ),
    "merge of two source rows on one target row": (
        "MERGE INTO tgt USING (SELECT id, age FROM s UNION ALL SELECT id, age FROM s) x "
        "ON tgt.id = 1 WHEN MATCHED THEN UPDATE SET age = x.age"
    ),
    "insert cast error": "INSERT INTO tgt SELECT id, name, CAST(name AS INT) FROM s",
    "delete with not in": "DELETE FROM tgt WHERE id NOT IN (SELECT id FROM s)",
}


@pytest.mark.parametrize("statement", list(FAILING))
def test_a_failed_consuming_statement_moves_nothing(lake: LakeSession, statement: str) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql(
        "ALTER STREAM s SET OFFSET LATEST; CREATE TABLE tgt (id INT, name VARCHAR, age INT); "
        "INSERT INTO tgt SELECT * FROM t; INSERT INTO t VALUES (2, 'b', 2)"
    )
    before = (desc(lake, "s"), changes(lake, "s"), latest(lake, "tgt"))
    refused(lake, FAILING[statement])
    assert (desc(lake, "s"), changes(lake, "s"), latest(lake, "tgt")) == before
    assert before[0]["pending_commits"] == 1
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]


@pytest.mark.parametrize("replaced", [False, True])
def test_a_stream_whose_source_was_dropped_or_replaced_is_stale(
    lake: LakeSession, replaced: bool
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("DROP TABLE t")
    if replaced:
        lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    why = "replaced" if replaced else "dropped"
    fix = (
        "recreate it with CREATE OR REPLACE TABLE STREAM s ON … , "
        "or move it with ALTER STREAM s SET OFFSET LATEST"
    )
    assert refused(lake, "SELECT * FROM s") == f"stream s is stale: its source t was {why} — {fix}"
    described = desc(lake, "s")
    assert (described["stale"], described["stale_reason"]) == (
        True,
        f"stream s is stale: its source t was {why}",
    )
    if replaced:
        lake.sql("CREATE OR REPLACE TABLE STREAM s ON TABLE t")
        assert desc(lake, "s")["stale"] is False
        assert changes(lake, "s") == []


def test_a_stream_whose_versions_expired_from_the_log_is_stale(
    spark: SparkSession, lake: LakeSession
) -> None:
    offset = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    location = lake.catalog.relation("t").location
    spark.sql(
        f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2')"
    )
    for number in range(2, 6):
        lake.sql(f"INSERT INTO t VALUES ({number}, 'x', {number})")
    # Log cleanup: the commits up to the last checkpoint go, pending ones included.
    log = Path(location) / "_delta_log"
    checkpoint = max(int(path.name[:20]) for path in log.glob("*.checkpoint.parquet"))
    assert checkpoint > offset + 1
    for version in range(checkpoint):
        (log / f"{version:020d}.json").unlink()
    assert len(rows(lake, "SELECT * FROM t")) == 5

    assert refused(lake, "SELECT * FROM s") == (
        f"stream s is stale: the versions after {offset} of t have expired — "
        "recreate it with CREATE OR REPLACE TABLE STREAM s ON … , "
        "or move it with ALTER STREAM s SET OFFSET LATEST"
    )
    assert desc(lake, "s")["stale"] is True
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    assert changes(lake, "s") == []


def vacuum_everything(spark: SparkSession, lake: LakeSession, table: str) -> None:
    """VACUUM with no retention: it deletes every file the latest version does not read."""
    location = lake.catalog.relation(table).location
    with session_conf(spark, {"spark.databricks.delta.retentionDurationCheck.enabled": "false"}):
        spark.sql(f"VACUUM delta.`{location}` RETAIN 0 HOURS").collect()


def test_a_stream_whose_files_were_vacuumed_is_stale(
    spark: SparkSession, lake: LakeSession
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql("ALTER STREAM s SET OFFSET LATEST; UPDATE t SET age = 5 WHERE id = 1")
    vacuum_everything(spark, lake, "t")
    assert desc(lake, "s")["stale"] is True
    assert refused(lake, "SELECT * FROM s").startswith("stream s is stale: ")


def test_a_first_read_with_initial_rows_needs_only_the_snapshot_at_its_end(
    spark: SparkSession, lake: LakeSession
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    lake.sql(
        "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE'); "
        "UPDATE t SET age = 5 WHERE id = 1"
    )
    vacuum_everything(spark, lake, "t")
    assert desc(lake, "s")["stale"] is False
    assert sorted((kind, *values) for kind, _, *values in changes(lake, "s")) == [
        ("INSERT", 1, "a", 5),
        ("INSERT", 2, "b", 2),
    ]


def claim(lake: LakeSession, stream: str, owner: str) -> None:
    """Write a claim on `stream` as a consumer writing table tgt would."""
    target = lake.catalog.relation("tgt").location
    lake.catalog.update(
        StreamEntry,
        stream,
        lambda entry: replace(
            entry, claim=Claim("another-statement", target, 0, latest(lake, "t"), owner)
        ),
    )


def test_a_second_consumer_fails_clearly_and_writes_nothing(lake: LakeSession) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("CREATE TABLE tgt (id INT, name VARCHAR, age INT)")
    offset = desc(lake, "s")["offset_version"]
    claim(lake, "s", offsets.owner())
    target_version = latest(lake, "tgt")

    assert refused(lake, "INSERT INTO tgt SELECT id, name, age FROM s") == (
        f"stream s is being consumed by another statement (process {offsets.owner()}) — "
        "run this statement again when that one has finished; nothing was written"
    )
    assert latest(lake, "tgt") == target_version
    assert rows(lake, "SELECT * FROM tgt") == []
    described = desc(lake, "s")
    assert (described["offset_version"], described["consumer"]) == (offset, offsets.owner())
    assert changes(lake, "s") != []

    lake.catalog.update(StreamEntry, "s", lambda entry: replace(entry, claim=None))
    lake.sql("INSERT INTO tgt SELECT id, name, age FROM s")
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]


def test_a_claim_of_a_dead_process_is_settled_by_the_next_read(lake: LakeSession) -> None:
    inserted = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("CREATE TABLE tgt (id INT, name VARCHAR, age INT)")
    offset = desc(lake, "s")["offset_version"]
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert not os.path.exists(f"/proc/{pid_max + 1}")
    claim(lake, "s", f"{socket.gethostname()}:{pid_max + 1}:0.000")

    # Its write never landed in tgt: the claim goes, the offset stays.
    assert changes(lake, "s") == [("INSERT", inserted, 1, "a", 1)]
    entry = lake.catalog.get(StreamEntry, "s")
    assert (entry.claim, entry.offset) == (None, offset)
    lake.sql("INSERT INTO tgt SELECT id, name, age FROM s")
    assert rows(lake, "SELECT * FROM tgt") == [(1, "a", 1)]
