"""Files as they arrive in practice, on real Spark + Delta: compressed by extension (gzip, bzip2,
deflate, zstd), JSON documents spanning lines, and CSV with a header row."""

from __future__ import annotations

import bz2
import gzip
import json
import zlib
from pathlib import Path

import zstandard

from lake_assets.session import LakeSession
from tests.ingest_helpers import local_volume, message, put, rows

CSV = "1,a\n2,b\n"
COMPRESSED = {
    "a.csv.gz": gzip.compress(CSV.encode()),
    "b.csv.bz2": bz2.compress(CSV.encode()),
    "c.csv.deflate": zlib.compress(CSV.encode()),
    "d.csv.zst": zstandard.ZstdCompressor().compress(CSV.encode()),
}


def test_compressed_files_load_by_their_extension(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    for name, content in COMPRESSED.items():
        put(volume, name, content)
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    assert message(lake, "COPY INTO t FROM VOLUME v USING CSV") == (
        "COPY: 4 files loaded (8 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, COUNT(*) FROM t GROUP BY id ORDER BY id") == [(1, 4), (2, 4)]


def test_json_documents_spanning_lines_and_csv_with_a_header(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    documents = [{"id": 1, "name": "a"}, {"name": "b", "id": 2}]
    put(volume, "docs/all.json", json.dumps(documents, indent=2))
    put(volume, "csv/h.csv", "id,name\n3,c\n")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING)")
    multi_line = "USING JSON OPTIONS('multiLine' = 'true') SUBDIRECTORY 'docs/'"
    assert message(lake, f"COPY INTO t FROM VOLUME v {multi_line}") == (
        "COPY: 1 files loaded (2 rows), 0 failed, 0 purged; t is at version 1"
    )
    header = "USING CSV OPTIONS('header' = 'true') SUBDIRECTORY 'csv/'"
    assert message(lake, f"COPY INTO t FROM VOLUME v {header}") == (
        "COPY: 1 files loaded (1 rows), 0 failed, 0 purged; t is at version 2"
    )
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]


def test_csv_columns_matched_by_their_header_names(lake: LakeSession, tmp_path: Path) -> None:
    volume = local_volume(lake, tmp_path / "incoming")
    put(volume, "a.csv", "NAME,extra,ID\nx,1,10\n")
    put(volume, "b.csv", "id,name\n20,y\n")
    lake.sql("CREATE TABLE t (id BIGINT, name STRING); CREATE TABLE s (id BIGINT, name STRING)")
    by_name = "USING CSV OPTIONS('header' = 'true') MATCH_BY_COLUMN_NAME = "
    assert message(lake, f"COPY INTO t FROM VOLUME v {by_name} CASE_INSENSITIVE") == (
        "COPY: 2 files loaded (2 rows), 0 failed, 0 purged; t is at version 1"
    )
    assert rows(lake, "SELECT id, name FROM t ORDER BY id") == [(10, "x"), (20, "y")]
    # Case-sensitive, a.csv's NAME and ID are not the table's name and id: NULL, as missing.
    lake.sql(f"COPY INTO s FROM VOLUME v {by_name} CASE_SENSITIVE")
    assert rows(lake, "SELECT id, name FROM s ORDER BY id NULLS FIRST") == [
        (None, None), (20, "y"),
    ]  # fmt: skip
