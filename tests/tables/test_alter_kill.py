"""ALTER TABLE … ADD | RENAME COLUMN, its `lake sql` process SIGKILLed after Delta's commit and
before the catalog records it: the next statement, a write, sees the columns the log says, and
the catalog records them then, not lost under the write's newer version."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from lake_assets.tables.columns import SCHEMA_COMMITTED
from lake_assets.tables.entry import TableEntry
from tests.crashes import lake_sql_killed_at
from tests.ingest_helpers import refused, rows

# The ALTER, the INSERT that follows it, the columns after both, and the retried ALTER's refusal.
CASES = {
    "add": (
        "ALTER TABLE t ADD COLUMN city STRING",
        "INSERT INTO t VALUES (2, 'b', 'Oslo')",
        ["id", "name", "city"],
        "table t already has a column city",
    ),
    "rename": (
        "ALTER TABLE t RENAME COLUMN name TO label",
        "INSERT INTO t (id, label) VALUES (2, 'b')",
        ["id", "label"],
        "table t has no column name",
    ),
}


@pytest.fixture
def lake_home(spark: SparkSession, tmp_path: Path) -> LakeSession:
    settings = LakeSettings(lake_home=tmp_path / "lake")
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    lake.sql("CREATE TABLE t (id BIGINT, name STRING); INSERT INTO t VALUES (1, 'a')")
    return lake


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_alter_killed_after_its_commit_is_seen_by_the_next_statement(
    lake_home: LakeSession, case: str
) -> None:
    lake = lake_home
    alter, insert, columns, retried = CASES[case]
    crashed = lake_sql_killed_at(lake.settings.lake_home, SCHEMA_COMMITTED, alter)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-3000:]
    assert [c.name for c in lake.catalog.get(TableEntry, "t").columns] == ["id", "name"]

    lake.sql(insert)
    assert [row[0] for row in rows(lake, "DESC t")] == columns
    entry = lake.catalog.get(TableEntry, "t")
    assert [c.name for c in entry.columns] == columns
    assert entry.version == entry.schema_version + 1  # the ALTER's commit, then the INSERT's
    assert rows(lake, f"SELECT {', '.join(columns)} FROM t ORDER BY id")[-1][:2] == (2, "b")
    assert refused(lake, alter).startswith(retried)
