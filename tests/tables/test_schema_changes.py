"""ALTER TABLE's column changes and TRUNCATE, parsed and applied to a column list without Spark:
what each leaves, what each refuses in one line (a key, an export or a stream in the way too),
and which type changes widen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from sqlglot import exp

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.exports.entry import ExportEntry
from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession
from lake_assets.sql.statements import Dml
from lake_assets.streams.entry import StreamEntry, StreamMode
from lake_assets.tables.alterations import AlterTableColumns
from lake_assets.tables.columns import recorded_schema, schema_record
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.schema_changes import (
    AddColumn,
    AlterColumnType,
    DeltaFeature,
    DropColumn,
    RenameColumn,
    widens,
)
from tests.ingest_helpers import refused

COLUMNS = (Column("id", "INT"), Column("Amount", "DECIMAL(10,2)", "in euros"), Column("n", "INT"))


@pytest.mark.parametrize(
    ("text", "change"),
    [
        ("ALTER TABLE t ADD COLUMN c BIGINT COMMENT 'new'", AddColumn("c", "BIGINT", "new")),
        ("ALTER TABLE t ADD c VARCHAR(8)", AddColumn("c", "VARCHAR(8)")),
        ("ALTER TABLE t RENAME COLUMN a TO b", RenameColumn("a", "b")),
        ("ALTER TABLE t DROP COLUMN a", DropColumn("a")),
        ("ALTER TABLE t ALTER COLUMN a SET DATA TYPE BIGINT", AlterColumnType("a", "BIGINT")),
        ("ALTER TABLE t ALTER a TYPE NUMERIC(12, 2)", AlterColumnType("a", "DECIMAL(12,2)")),
    ],
)
def test_each_column_change_parses_to_its_change(text: str, change: object):
    assert parse_statement(text) == AlterTableColumns("t", change)  # type: ignore[arg-type]


def test_truncate_is_a_delete_of_every_row():
    for text in ("TRUNCATE TABLE Sales", "TRUNCATE sales"):
        statement = parse_statement(text)
        assert isinstance(statement, Dml)
        assert (statement.operation, statement.target) == ("DELETE", "sales")
        assert isinstance(statement.expression, exp.Delete)
        assert statement.expression.find(exp.Where) is None


def test_a_new_column_cannot_be_the_key_as_it_is_added():
    with pytest.raises(LakeError, match="cannot be the key as it is added"):
        parse_statement("ALTER TABLE t ADD COLUMN k INT PRIMARY KEY")


def test_each_change_leaves_the_columns_in_place():
    assert AddColumn("note", "STRING").apply("t", COLUMNS)[-1] == Column("note", "STRING")
    renamed = RenameColumn("amount", "total").apply("t", COLUMNS)
    assert renamed[1] == Column("total", "DECIMAL(10,2)", "in euros")
    assert [c.name for c in DropColumn("AMOUNT").apply("t", COLUMNS)] == ["id", "n"]
    assert AlterColumnType("n", "BIGINT").apply("t", COLUMNS)[2] == Column("n", "BIGINT")
    # a rename that only changes the case of the name
    assert RenameColumn("n", "N").apply("t", COLUMNS)[2].name == "N"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (AddColumn("ID", "INT"), "already has a column ID"),
        (AddColumn("__lake_x", "INT"), "lakehouse's own"),
        (RenameColumn("nope", "x"), "has no column nope"),
        (RenameColumn("n", "id"), "already has a column id"),
        (DropColumn("nope"), "has no column nope"),
        (AlterColumnType("n", "INT"), "is INT already"),
        (AlterColumnType("n", "SMALLINT"), "cannot change from INT to SMALLINT"),
        (AlterColumnType("amount", "DECIMAL(10,3)"), "cannot change from DECIMAL"),
        (AlterColumnType("n", "STRING"), "only a wider type"),
    ],
)
def test_a_change_the_table_cannot_take_is_refused_in_one_line(change, message: str):
    with pytest.raises(LakeError, match=message):
        change.apply("t", COLUMNS)


def test_the_only_column_cannot_be_dropped():
    with pytest.raises(LakeError, match="DROP TABLE t"):
        DropColumn("id").apply("t", COLUMNS[:1])


@pytest.mark.parametrize(
    ("old", "new", "wider"),
    [
        ("TINYINT", "BIGINT", True),
        ("INT", "BIGINT", True),
        ("BIGINT", "INT", False),
        ("INT", "DOUBLE", True),
        ("FLOAT", "DOUBLE", True),
        ("DOUBLE", "FLOAT", False),
        ("BIGINT", "DOUBLE", True),
        ("DATE", "TIMESTAMP_NTZ", True),
        ("DATE", "TIMESTAMP", False),
        ("DECIMAL(10,2)", "DECIMAL(12,2)", True),
        ("DECIMAL(10,2)", "DECIMAL(12,4)", True),
        ("DECIMAL(10,2)", "DECIMAL(11,4)", False),  # one digit fewer before the point
        ("DECIMAL(10,2)", "DECIMAL(10,2)", False),
        ("STRING", "VARCHAR(8)", False),
        ("INT", "STRING", False),
    ],
)
def test_only_wider_types_widen(old: str, new: str, wider: bool):
    assert widens(old, new) is wider


def test_renames_and_drops_need_column_mapping_and_type_changes_type_widening():
    assert AddColumn("c", "INT").feature() is None
    assert RenameColumn("a", "b").feature() is DeltaFeature.COLUMN_MAPPING
    assert DropColumn("a").feature() is DeltaFeature.COLUMN_MAPPING
    assert AlterColumnType("a", "BIGINT").feature() is DeltaFeature.TYPE_WIDENING
    assert DeltaFeature.COLUMN_MAPPING.turned_on == "name"
    assert RenameColumn("A", "b").renamed() == {"a": "b"}
    assert AddColumn("c", "STRING", "it's").delta_clause() == (
        "ADD COLUMNS (`c` STRING COMMENT 'it\\'s')"
    )


def no_spark() -> SparkSession:
    raise AssertionError("a refused change must not start Spark")


@pytest.fixture
def catalog_only(tmp_path: Path) -> LakeSession:
    """Table t keyed by id, with a changelog export (leading with the key) and a stream."""
    settings = LakeSettings(lake_home=tmp_path)
    lake = LakeSession(Catalog(settings.catalog_path), settings, no_spark)
    lake.catalog.add(TableEntry("t", "/w/t-1", COLUMNS, primary_key=("id",)))
    lake.catalog.add(ExportEntry("e", source="t", key=("id",), to_volume="v"))
    lake.catalog.add(StreamEntry("s", "t", "table", "/w/t-1", StreamMode.STANDARD, False, 0))
    return lake


def test_readers_of_a_column_or_of_the_changes_refuse_the_change_before_spark(
    catalog_only: LakeSession,
):
    assert refused(catalog_only, "ALTER TABLE t RENAME COLUMN id TO ident") == (
        "changelog export e reads column id of table t: it cannot be renamed under it — first "
        "change or drop changelog export e so that it no longer reads id"
    )
    assert refused(catalog_only, "ALTER TABLE t DROP COLUMN id").startswith(
        "column id is in table t's primary key"
    )
    assert refused(catalog_only, "ALTER TABLE t ALTER COLUMN n TYPE BIGINT").startswith(
        "stream s reads table t's changes, which cannot be read across this change (changed "
        "column n to BIGINT) — drop stream s first"
    )
    assert refused(catalog_only, "ALTER TABLE s ADD COLUMN x INT").startswith(
        "s is a stream: only a table's columns change with ALTER TABLE"
    )


def commit(log: Path, version: int, user_metadata: str | None) -> None:
    log.mkdir(parents=True, exist_ok=True)
    info = {"commitInfo": {"operation": "WRITE", "userMetadata": user_metadata}}
    (log / f"{version:020d}.json").write_text(json.dumps(info) + "\n")


def test_a_cut_off_schema_record_is_made_good_from_the_log_without_spark(tmp_path: Path):
    catalog = Catalog(tmp_path / "catalog.db")
    location = tmp_path / "t"
    entry = catalog.add(TableEntry("t", str(location), COLUMNS, primary_key=("id",)))
    catalog.record_table_state(entry, 1, 3)
    schema = schema_record(
        (*COLUMNS, Column("note", "STRING")), ("id",), (), "added column note STRING"
    )
    commit(location / "_delta_log", 1, None)
    commit(location / "_delta_log", 2, json.dumps({"lake_schema": 1, "tag": "x", "schema": schema}))
    commit(location / "_delta_log", 3, '{"someone_else": 1, "schema": {}}')  # not ours: ignored
    commit(location / "_delta_log", 4, "not JSON")
    restored = recorded_schema(catalog, catalog.get(TableEntry, "t"))
    assert [c.name for c in restored.columns] == ["id", "Amount", "n", "note"]
    assert (restored.schema_version, restored.schema_change) == (2, "added column note STRING")
    assert catalog.get(TableEntry, "t") == restored  # recorded, so the next reader reads no log
    assert recorded_schema(catalog, restored) is restored
