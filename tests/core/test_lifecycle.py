"""CREATE of a name that is taken, for every kind: the one-line refusal names the statement that
would skip it (no Spark: the name is checked before anything else)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from pyspark.sql import SparkSession

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.exports.entry import ExportEntry
from lake_assets.pipes.entry import PipeEntry
from lake_assets.session import LakeSession
from lake_assets.streams.entry import StreamEntry, StreamMode
from lake_assets.tables.entry import TableEntry
from lake_assets.tasks.entry import TaskEntry
from lake_assets.views.entry import ViewEntry
from lake_assets.volumes.entry import VolumeEntry
from tests.ingest_helpers import refused

# Each kind: an object of it named x, and the CREATE statement that would make another.
TAKEN: dict[str, tuple[CatalogObject, str]] = {
    "connection": (ConnectionEntry("x"), "CREATE STORAGE CONNECTION x TYPE LOCAL"),
    "volume": (
        VolumeEntry("x"),
        "CREATE EXTERNAL VOLUME x LOCATION 'file:///nowhere/' USING CONNECTION c",
    ),
    "pipe": (
        PipeEntry("x"),
        "CREATE PIPE x INGEST_MODE = 'LIST_PURGE' AS COPY INTO t FROM VOLUME v USING CSV",
    ),
    "table": (TableEntry("x", "/nowhere", ()), "CREATE TABLE x (id INT)"),
    "stream": (
        StreamEntry("x", "t", "table", "/nowhere", StreamMode.STANDARD, False, 0),
        "CREATE TABLE STREAM x ON TABLE t",
    ),
    "dynamic_table": (
        DynamicTableEntry("x", "/nowhere", (), "SELECT 1", ()),
        "CREATE DYNAMIC TABLE x AS SELECT 1 AS one",
    ),
    "task": (TaskEntry("x"), "CREATE TASK x SCHEDULE = '1 MINUTE' AS INSERT INTO t SELECT 1"),
    "export": (ExportEntry("x"), "CREATE CHANGELOG EXPORT x FROM TABLE t TO TABLE r"),
    "view": (ViewEntry("x", "SELECT 1", (), ()), "CREATE VIEW x AS SELECT 1 AS one"),
}


@pytest.fixture
def session(tmp_path: Path) -> LakeSession:
    """A session whose Spark is never used: any statement that reached it would fail."""
    settings = LakeSettings(lake_home=tmp_path)
    return LakeSession(Catalog(settings.catalog_path), settings, lambda: cast(SparkSession, None))


def test_every_kind_names_its_create_and_show_statements() -> None:
    assert set(TAKEN) == set(CatalogObject.KINDS)
    for kind in CatalogObject.KINDS.values():
        assert kind.CREATE.startswith("CREATE "), kind
        assert kind.SHOW.startswith("SHOW "), kind


@pytest.mark.parametrize("kind", sorted(TAKEN))
def test_a_taken_name_is_refused_with_the_kind_s_if_not_exists(
    session: LakeSession, kind: str
) -> None:
    entry, create = TAKEN[kind]
    words = create.split(" x ")[0]  # the statement's own words: CREATE STORAGE CONNECTION, …
    session.catalog.add(entry)
    assert refused(session, create) == (
        f"{entry.LABEL} x already exists — use {words} IF NOT EXISTS, pick another name, or "
        "DROP it first"
    )
    if_not_exists = create.replace(" x ", " IF NOT EXISTS x ", 1)
    ((result,),) = [session.sql(if_not_exists)]
    assert result.message == f"{entry.LABEL} x already exists; nothing to do"


def test_a_name_taken_by_another_kind_is_refused_without_if_not_exists(
    session: LakeSession,
) -> None:
    stream, _ = TAKEN["stream"]
    session.catalog.add(stream)
    assert refused(session, "CREATE TABLE IF NOT EXISTS x (id INT)") == (
        "stream x already exists — pick another name, or drop stream x first"
    )
