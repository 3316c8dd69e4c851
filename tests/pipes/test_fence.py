"""The fence of concurrent loads into one table: two loaders that acted on the same load records
commit at most once between them, whatever other commits land between their reads, and the
one that loses is told so in one clear error."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lake_assets.core.delta import history, local_table
from lake_assets.core.errors import LakeError
from lake_assets.pipes import loading
from lake_assets.pipes.copy_grammar import copy_of
from lake_assets.pipes.load_records import load_history
from lake_assets.pipes.loading import load, reconcile
from lake_assets.pipes.planning import plan_files
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import source_files, store_of
from tests.ingest_helpers import local_volume, put, rows

COPY = copy_of("COPY INTO t FROM VOLUME v USING CSV")


def test_two_loaders_with_another_commit_between_their_reads_load_a_file_once(
    spark: SparkSession, lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "a.csv", "1,a\n2,b\n")
    catalog, days = lake.catalog, lake.settings.load_history_days
    store = store_of(catalog, lake.settings, catalog.get(VolumeEntry, "v"))

    def read() -> tuple[TableEntry, int, list]:
        """One loader's reconcile and the files it then finds pending."""
        table = catalog.get(TableEntry, "t")
        version = reconcile(spark, catalog, table)
        files = source_files(COPY.source, catalog.get(VolumeEntry, "v"), store)
        return table, version, plan_files(catalog, "t", files, days).pending

    first = read()  # at version 0
    lake.sql("INSERT INTO t VALUES (9, 'z')")  # version 1: no load records
    second = read()  # at version 1
    assert (first[1], second[1], len(first[2]), len(second[2])) == (0, 1, 1, 1)

    table, version, todo = first
    assert load(spark, catalog, table, COPY.source, store, todo, fence=version).version == 2
    table, version, todo = second
    with pytest.raises(LakeError, match="another load into t committed at the same moment"):
        load(spark, catalog, table, COPY.source, store, todo, fence=version)

    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [(1, "a"), (2, "b"), (9, "z")]
    assert [(r.status, r.commit_version) for r in load_history(catalog, "t")] == [("LOADED", 2)]
    location = catalog.get(TableEntry, "t").location
    carrying = [
        c.version for c in history(spark, location) if "lake_load" in (c.user_metadata or "")
    ]
    assert carrying == [2]
    assert json.loads(history(spark, location, 1)[0].user_metadata)["txn"] == 0


def test_a_load_that_loses_the_race_to_a_commit_under_its_fence_fails_clearly(
    spark: SparkSession, lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the load writes its rows (its transaction has read the table), a rival commits under
    the same app id and number, as a second COPY of the volume would: Delta refuses the load's
    commit as a concurrent transaction, and the user reads the same error as for a skipped one."""
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "a.csv", "1,a\n")
    log = local_table(lake.catalog.get(TableEntry, "t").location) / "_delta_log"

    def rival(value: int) -> int:
        """Runs in a Python worker while the load's rows are written (its transaction read
        version 0): commits version 1 first, once, as number 0 of the loads' app id. Written by
        hand: the workers' Python has the standard library only."""
        stamp = int(time.time() * 1000)
        actions = [
            {"commitInfo": {"timestamp": stamp, "operation": "WRITE", "isBlindAppend": True}},
            {"txn": {"appId": "lake-load-t", "version": 0, "lastUpdated": stamp}},
        ]
        try:
            with open(log / f"{1:020d}.json", "x", encoding="utf-8") as commit:
                commit.write("".join(json.dumps(action) + "\n" for action in actions))
        except FileExistsError:
            pass
        return value

    racing = F.udf(rival, "bigint", useArrow=False)
    real = loading.as_table_rows
    monkeypatch.setattr(
        loading,
        "as_table_rows",
        lambda frame, table, columns: real(frame, table, columns).withColumn(
            "id", racing(F.col("id"))
        ),
    )
    with pytest.raises(LakeError, match="another load into t committed at the same moment"):
        lake.sql("COPY INTO t FROM VOLUME v USING CSV")
    assert rows(lake, "SELECT id, name FROM t") == []
    assert load_history(lake.catalog, "t") == []
