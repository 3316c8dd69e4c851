"""Columns a load's files bring that the table lacks, on real Spark + Delta: ignored by default,
kept as JSON in the rescued-data column, or added to the table in the load's own commit (and a
crash right after that commit loses none of it)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from lake_assets.core.entries import Column
from lake_assets.pipes.evolution import Evolution, plan_evolution
from lake_assets.pipes.loading import AFTER_COMMIT
from lake_assets.session import LakeSession
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.grammar import VolumeSource
from resources.storage import VolumeStore
from tests.crashes import Crash, crash_at
from tests.ingest_helpers import local_volume, message, put, refused, rows


def parquet(**columns: list) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out)
    return out.getvalue()


def test_new_columns_are_ignored_rescued_or_added(lake: LakeSession, tmp_path: Path) -> None:
    landing = local_volume(lake, tmp_path / "landing")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(landing, "a.parquet", parquet(id=[1], name=["a"], extra=[1.5]))
    lake.sql("COPY INTO t FROM VOLUME v USING PARQUET")
    assert rows(lake, "SELECT * FROM t") == [(1, "a")]  # not loaded, as by default

    assert refused(
        lake, "ALTER TABLE t SET PROPERTIES ('rescued_data_column' = '_rescued_data')"
    ).startswith("table t has no STRING column _rescued_data to keep rescued data in")
    lake.sql(
        "ALTER TABLE t ADD COLUMN _rescued_data STRING;"
        "ALTER TABLE t SET PROPERTIES ('rescued_data_column' = '_rescued_data')"
    )
    put(landing, "b.parquet", parquet(id=[2, 3], name=["b", "c"], extra=[2.5, None]))
    put(landing, "c.json", json.dumps({"id": 4, "name": "d", "tags": ["x"]}) + "\n")
    lake.sql(
        "COPY INTO t FROM VOLUME v USING PARQUET FILES ('b.parquet');"
        "COPY INTO t FROM VOLUME v USING JSON FILES ('c.json')"
    )
    assert rows(lake, "SELECT id, _rescued_data FROM t WHERE id > 1 ORDER BY id") == [
        (2, '{"extra":2.5}'),
        (3, None),
        (4, '{"tags":["x"]}'),
    ]

    lake.sql("ALTER TABLE t SET PROPERTIES ('schema_evolution' = 'true')")
    put(landing, "d.parquet", parquet(id=[5], name=["e"], extra=[5.5], note=["new"]))
    loaded = message(lake, "COPY INTO t FROM VOLUME v USING PARQUET FILES ('d.parquet')")
    assert loaded.startswith("COPY: 1 files loaded (1 rows)")
    assert [row[:2] for row in rows(lake, "DESC t")] == [
        ("id", "BIGINT"),
        ("name", "STRING"),
        ("_rescued_data", "STRING"),
        ("extra", "DOUBLE"),
        ("note", "STRING"),
    ]
    assert rows(lake, "SELECT id, extra, note, _rescued_data FROM t WHERE id >= 4 ORDER BY id") == [
        (4, None, None, '{"tags":["x"]}'),
        (5, 5.5, "new", None),
    ]
    assert rows(lake, "SHOW TABLES")[0][2:5] == (False, True, "_rescued_data")
    entry = lake.catalog.get(TableEntry, "t")
    assert entry.schema_change == "added columns extra DOUBLE, note STRING"
    assert entry.schema_version == entry.version  # one commit: the rows and the new columns


CSV_BY_NAME = (
    "COPY INTO t FROM VOLUME v USING CSV OPTIONS('header' = 'true') FILES ('{}') "
    "MATCH_BY_COLUMN_NAME = {}"
)


def test_a_csv_header_brings_new_columns_as_text(lake: LakeSession, tmp_path: Path) -> None:
    landing = local_volume(lake, tmp_path / "landing")
    lake.sql("CREATE TABLE t (id BIGINT, amount INT, _rescued_data STRING)")
    put(landing, "a.csv", "ID,Amount,City\n1,10,Oslo\n")
    lake.sql(CSV_BY_NAME.format("a.csv", "CASE_INSENSITIVE"))
    assert rows(lake, "SELECT * FROM t") == [(1, 10, None)]  # not loaded, as by default

    lake.sql("ALTER TABLE t SET PROPERTIES ('rescued_data_column' = '_rescued_data')")
    put(landing, "b.csv", "city,id,Amount\nBergen,2,20\n")
    lake.sql(CSV_BY_NAME.format("b.csv", "CASE_INSENSITIVE"))
    assert rows(lake, "SELECT * FROM t WHERE id = 2") == [(2, 20, '{"city":"Bergen"}')]

    lake.sql("ALTER TABLE t SET PROPERTIES ('schema_evolution' = 'true')")
    put(landing, "c.csv", "id,Amount,City,Zip\n3,30,Oslo,0150\n4,40,,\n")
    put(landing, "d.csv", "zip,id\n5000,5\n")
    loaded = message(lake, CSV_BY_NAME.format("c.csv', 'd.csv", "CASE_INSENSITIVE"))
    assert loaded.startswith("COPY: 2 files loaded (3 rows)")
    # The header's spelling, as text: '0150' keeps its zero, as a STRING.
    assert [row[:2] for row in rows(lake, "DESC t")][3:] == [("City", "STRING"), ("Zip", "STRING")]
    assert rows(lake, "SELECT id, amount, city, zip FROM t WHERE id > 2 ORDER BY id") == [
        (3, 30, "Oslo", "0150"),
        (4, 40, None, None),
        (5, None, None, "5000"),
    ]
    # By exact names, `Amount` is not column amount, nor a new one (a table cannot hold both).
    put(landing, "e.csv", "id,Amount,zip\n6,60,6000\n")
    lake.sql(CSV_BY_NAME.format("e.csv", "CASE_SENSITIVE"))
    assert rows(lake, "SELECT id, amount, zip FROM t WHERE id = 6") == [(6, None, None)]
    assert len(rows(lake, "DESC t")) == 5


def test_a_crash_after_a_load_that_added_columns_loses_none_of_them(
    lake: LakeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing = local_volume(lake, tmp_path / "landing")
    lake.sql(
        "CREATE TABLE t (id BIGINT); ALTER TABLE t SET PROPERTIES ('schema_evolution' = 'true')"
    )
    put(landing, "a.json", '{"id": 1, "city": "Oslo"}\n')
    crash_at(monkeypatch, AFTER_COMMIT)
    with pytest.raises(Crash):
        lake.sql("COPY INTO t FROM VOLUME v USING JSON")
    monkeypatch.undo()
    assert [c.name for c in lake.catalog.get(TableEntry, "t").columns] == ["id"]
    assert message(lake, "COPY INTO t FROM VOLUME v USING JSON").startswith(
        "COPY: 0 files loaded"
    )  # the file was loaded by the cut-off commit, and the table has its column
    assert [c.name for c in lake.catalog.get(TableEntry, "t").columns] == ["id", "city"]
    assert rows(lake, "SELECT * FROM t") == [(1, "Oslo")]


def test_what_a_load_reads_and_writes_with_new_columns() -> None:
    table = (Column("id", "BIGINT"), Column("_rescued", "STRING"))
    new = (Column("extra", "DOUBLE"),)
    source = VolumeSource("v", "PARQUET")
    rescuing = Evolution(rescued=new, rescue_column="_rescued")
    assert rescuing.read_columns(table) == (Column("id", "BIGINT"), *new)
    assert rescuing.written(rescuing.read_columns(table))[-1] == Column("_rescued", "STRING")
    assert rescuing.table_columns(table) == table
    assert rescuing.source(source).options == {"mergeSchema": "true"}
    adding = Evolution(added=(*new, Column("note", "STRING")))
    assert adding.table_columns(table)[2:] == adding.added
    assert adding.describe() == "added columns extra DOUBLE, note STRING"
    assert Evolution().source(source) == source  # nothing new: one file's footer is enough


def test_a_csv_headers_new_names_in_any_case_are_text_spelt_as_first_met() -> None:
    columns = (Column("id", "BIGINT"), Column("amount", "INT"))
    headers = {"a.csv": ["ID", "Amount", "City"], "b.csv": ["city", "zip", "id"]}
    source = VolumeSource("v", "CSV", options={"header": "true"})
    table = TableEntry("t", "/w/t-1", columns, properties={"schema_evolution": "true"})
    # No Spark: the headers, read for matching by name, are all a CSV file says of its columns.
    spark, store = cast(SparkSession, None), cast(VolumeStore, None)
    evolution = plan_evolution(spark, table, source, store, list(headers), columns, headers)
    assert evolution.added == (Column("City", "STRING"), Column("zip", "STRING"))
    rescuing = replace(table, properties={"rescued_data_column": "_rescued"})
    evolution = plan_evolution(spark, rescuing, source, store, list(headers), columns, headers)
    assert (evolution.added, evolution.rescued[0]) == ((), Column("City", "STRING"))
    # An empty header field (Spark's `_c2`) names nothing; the lakehouse's own names are never a
    # file's; a name Delta cannot hold, or with a backtick, is rescued, not added.
    odd = {"c.csv": ["id", "__LAKE_rowid", "_c2", "a b", "x`y"]}
    rescuing_evolving = replace(table, properties={**table.properties, **rescuing.properties})
    evolution = plan_evolution(spark, rescuing_evolving, source, store, list(odd), columns, odd)
    assert (evolution.added, evolution.rescued) == (
        (),
        (Column("a b", "STRING"), Column("x`y", "STRING")),
    )
    # Read by place (no headers read), a CSV file names no columns.
    assert plan_evolution(spark, table, source, store, ["a.csv"], columns) == Evolution()
