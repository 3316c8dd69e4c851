"""The code location: catalog tables become assets with schema metadata, and no JVM starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, TableColumn, TableSchema

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.rendering import markdown_text
from lake_assets.core.settings import LakeSettings
from lake_assets.definitions import build_definitions
from lake_assets.tables.entry import TableEntry


@pytest.fixture
def home(tmp_path: Path) -> Path:
    catalog = Catalog(tmp_path / "catalog.db")
    entry = catalog.add(
        TableEntry(
            "sales_source",
            str(tmp_path / "warehouse" / "sales_source-1"),
            (Column("id", "BIGINT", "Order ID"), Column("amount", "DECIMAL(10,2)")),
            comment="Source table",
        )
    )
    catalog.record_table_state(entry, 3, 5)
    return tmp_path


def test_every_catalog_table_is_an_asset_with_its_schema(home: Path) -> None:
    defs = build_definitions(LakeSettings(lake_home=home))
    (spec,) = defs.assets
    assert spec.key == AssetKey("sales_source")
    assert spec.description == "Source table"
    assert spec.group_name == "tables"
    assert spec.metadata["dagster/column_schema"] == TableSchema(
        columns=[
            TableColumn("id", "BIGINT", description="Order ID"),
            TableColumn("amount", "DECIMAL(10,2)"),
        ]
    )
    assert spec.metadata["dagster/row_count"].value == 5
    assert spec.metadata["lake/version"].value == 3
    assert spec.metadata["lake/change_tracking"] is False


def test_comments_are_descriptions_that_render_as_text(tmp_path: Path) -> None:
    """A comment cannot make the UI fetch an image or link to a script: it is escaped Markdown."""
    comment = "<img src=http://127.0.0.1:9/p.png> [x](javascript:alert(1))"
    Catalog(tmp_path / "catalog.db").add(
        TableEntry("t", str(tmp_path / "t"), (Column("id", "BIGINT", comment),), comment=comment)
    )
    (spec,) = build_definitions(LakeSettings(lake_home=tmp_path)).assets
    (column,) = spec.metadata["dagster/column_schema"].columns
    for described in (spec.description, column.description):
        assert described == markdown_text(comment)


def run_python(home: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LAKE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.slow
def test_loading_the_code_location_starts_no_jvm(home: Path) -> None:
    loaded = run_python(
        home,
        "import time; started = time.perf_counter()\n"
        "from lake_assets.definitions import defs\n"
        "from pyspark import SparkContext\n"
        "print(len(defs.assets), SparkContext._gateway is None, SparkContext._jvm is None)\n"
        "print(f'{time.perf_counter() - started:.2f}', file=__import__('sys').stderr)\n",
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["1", "True", "True"]
    print(f"definitions loaded in {loaded.stderr.strip()} s")


@pytest.mark.slow
def test_dagster_validates_the_definitions(home: Path) -> None:
    env = {**os.environ, "LAKE_HOME": str(home), "DAGSTER_HOME": str(home)}
    dagster = Path(sys.executable).with_name("dagster")
    validated = subprocess.run(
        [str(dagster), "definitions", "validate", "-m", "lake_assets.definitions"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert validated.returncode == 0, validated.stderr
    assert "All code locations passed validation" in validated.stderr + validated.stdout
