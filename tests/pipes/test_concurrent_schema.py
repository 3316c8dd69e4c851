"""An ALTER TABLE t ADD COLUMN from one session commits while another session's COPY of several
files into t is writing: the COPY loses its commit to the ALTER's change of metadata, nothing of
it is written, and it runs again by itself; both land, every row once, the columns right."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes import loading
from lake_assets.pipes.load_records import load_history
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from tests.ingest_helpers import local_volume, message, put, rows

FILES = {f"{n}.json": f'{{"id": {n}, "name": "x{n}"}}\n' for n in range(1, 4)}


def held_until(go: Path, started: Path) -> SparkColumn:
    """A condition true for every row, each of whose tasks says it `started` (inside the write's
    Delta transaction) and waits for `go`: the writer's commit waits with it."""

    def wait(_: int) -> bool:
        started.touch()
        while not go.exists():
            time.sleep(0.01)
        return True

    # A pickled UDF, not Arrow's: Spark's Python workers need not have pyarrow.
    return F.udf(wait, "boolean", useArrow=False)(F.lit(1))


def test_an_add_column_committed_during_a_copy_lands_with_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = LakeSettings(lake_home=tmp_path / "lake")
    copier = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    volume = local_volume(copier, tmp_path / "incoming")
    copier.sql("CREATE TABLE t (id BIGINT, name STRING)")
    for name, content in FILES.items():
        put(volume, name, content)
    go, started = tmp_path / "go", tmp_path / "started"
    table_rows: Callable[..., DataFrame] = loading.as_table_rows
    writes: list[DataFrame] = []

    def held_rows(*args: object) -> DataFrame:
        writes.append(table_rows(*args).filter(held_until(go, started)))
        return writes[-1]

    monkeypatch.setattr(loading, "as_table_rows", held_rows)
    outcome: list[object] = []

    def copy() -> None:
        try:
            outcome.append(message(copier, "COPY INTO t FROM VOLUME v USING JSON"))
        except Exception as error:
            outcome.append(error)

    writer = threading.Thread(target=copy)
    writer.start()
    try:
        while writer.is_alive() and not started.exists():
            time.sleep(0.01)
        assert started.exists(), outcome
        altering = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
        assert message(altering, "ALTER TABLE t ADD COLUMN city STRING").startswith(
            "table t: added column city STRING (version 1)"
        )
    finally:
        go.touch()
        writer.join()

    assert len(writes) == 2  # the write that lost its commit to the ALTER, and the next try
    assert outcome == ["COPY: 3 files loaded (3 rows), 0 failed, 0 purged; t is at version 2"]
    assert rows(copier, "SELECT * FROM t ORDER BY id") == [
        (1, "x1", None),
        (2, "x2", None),
        (3, "x3", None),
    ]
    entry = copier.catalog.get(TableEntry, "t")
    assert [c.name for c in entry.columns] == ["id", "name", "city"]
    assert (entry.version, entry.schema_version, entry.row_count) == (2, 1, 3)
    assert sorted(r.commit_version for r in load_history(copier.catalog, "t")) == [2, 2, 2]
