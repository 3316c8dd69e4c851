"""Files out of the ordinary (odd names, re-uploads, bad Parquet, overflows) load or fail alone."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.pipes.load_records import load_history
from lake_assets.session import LakeSession
from tests.ingest_helpers import age, files, local_volume, message, put, rows
from tests.pipes.loading_helpers import COPY, NO_CHANGE, assert_catalog_matches, records_by_name

# --- bugs found while writing these tests ---


def test_file_names_with_spaces_are_loaded_and_failed_like_any_other(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "day one.csv", "1,a\n2,b\n")
    put(volume, "day two.csv", "3,c\nx,d\n")
    lake.sql(f"{COPY} PURGE = TRUE")
    records = records_by_name(lake, "t")
    assert (records["day%20one.csv"].status, records["day%20one.csv"].rows_loaded) == ("LOADED", 2)
    assert records["day%20two.csv"].status == "LOAD_FAILED"
    assert files(volume) == ["day two.csv"]
    assert_catalog_matches(lake, "t", version=1, count=2)


def test_purge_keeps_a_reuploaded_file_that_was_not_loaded(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "a.csv", "1,a\n", seconds=20)
    lake.sql(COPY)  # loaded, not purged
    put(volume, "a.csv", "2,b\n3,c\n")  # the same name, new rows
    assert message(lake, f"{COPY} PURGE = TRUE").startswith("COPY: 0 files loaded")
    assert files(volume) == ["a.csv"]  # its rows are not committed: it must not be deleted


def test_a_corrupt_parquet_file_fails_alone(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    lake.sql(
        "COPY INTO VOLUME v FROM (SELECT CAST(1 AS BIGINT) AS id, 'a' AS name "
        "UNION ALL SELECT 2, 'b') FILE_FORMAT = (TYPE = PARQUET)"
    )
    age(volume / "part00001.parquet")
    put(volume, "part00002.parquet", b"PAR1 this upload was cut short")
    assert message(lake, "COPY INTO t FROM VOLUME v USING PARQUET").startswith(
        "COPY: 1 files loaded (2 rows), 1 failed"
    )
    assert records_by_name(lake, "t")["part00002.parquet"].status == "LOAD_FAILED"


def test_copy_into_a_table_with_a_varchar_column(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE codes (id INT, code VARCHAR(3))")
    put(volume, "codes.csv", "1,abc\n")
    assert message(lake, "COPY INTO codes FROM VOLUME v USING CSV").startswith(
        "COPY: 1 files loaded (1 rows)"
    )


def test_an_integer_overflow_names_its_column(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id INT, name STRING)")
    put(volume, "big.csv", "99999999999,a\n")
    lake.sql(COPY)
    assert records_by_name(lake, "t")["big.csv"].first_error_message == (
        "column id: '99999999999' is not a valid INT"
    )


# --- file names reach Spark literally, and a file Spark cannot read fails alone ---

GLOB_NAMES = ["x1.csv", "x*.csv", "x[1].csv", "x?.csv", "x{1}.csv"]


def test_file_names_with_glob_characters_are_each_read_once(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    for number, name in enumerate(GLOB_NAMES):
        put(volume, name, f"{number},{name}\n")
    expected = sorted(enumerate(GLOB_NAMES))
    assert (
        message(lake, COPY)
        == "COPY: 5 files loaded (5 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == expected
    assert (
        sorted((int(i), name) for i, name in rows(lake, "SELECT * FROM VOLUME v USING CSV"))
        == expected
    )
    assert message(lake, COPY) == NO_CHANGE


def test_file_names_with_a_colon_load(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    put(volume, "good.csv", "1,a\n")
    put(volume, "a:b.csv", "2,b\n")
    put(volume, "a:b[1].csv", "3,c\n")  # Hadoop's glob cannot take this one: it is read alone
    assert (
        message(lake, COPY)
        == "COPY: 3 files loaded (3 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id FROM t ORDER BY id") == [(1,), (2,), (3,)]
    assert {r.status for r in load_history(lake.catalog, "t")} == {"LOADED"}


def test_a_parquet_file_whose_types_do_not_fit_fails_alone(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    lake.sql("CREATE TABLE t (id INT, name STRING)")
    tables = {
        "good.parquet": pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}),
        "string_id.parquet": pa.table({"id": ["x"], "name": ["b"]}),
        "struct_id.parquet": pa.table({"id": [{"a": 3}], "name": ["c"]}),
    }
    for name, table in tables.items():
        pq.write_table(table, volume / name)
        age(volume / name)
    copy = "COPY INTO t FROM VOLUME v USING PARQUET"
    assert message(lake, copy) == (
        "COPY: 1 files loaded (1 rows), 2 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name FROM t") == [(1, "a")]
    records = records_by_name(lake, "t")
    assert records["good.parquet"].status == "LOADED"
    for name in ("string_id.parquet", "struct_id.parquet"):
        error = records[name].first_error_message or ""
        assert records[name].status == "LOAD_FAILED"
        assert "\n" not in error
        assert "at org." not in error
    assert "CAST_INVALID_INPUT" in (records["string_id.parquet"].first_error_message or "")
    assert "DATATYPE_MISMATCH" in (records["struct_id.parquet"].first_error_message or "")
    assert message(lake, copy) == NO_CHANGE  # an unchanged failed file is not tried again
