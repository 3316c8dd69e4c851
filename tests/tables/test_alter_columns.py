"""ALTER TABLE's column changes on real Spark + Delta, under a stream, a dynamic table, a COPY, a
task and an export: what each shows after the change, what is refused, and a crash between Delta's
ALTER and the catalog's record made good from the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.lake_session import LakeSession
from lake_assets.tables.columns import SCHEMA_COMMITTED
from lake_assets.tables.entry import TableEntry
from tests.crashes import Crash, crash_at
from tests.ingest_helpers import local_volume, message, put, refused, rows


def test_columns_change_under_a_stream_a_dynamic_table_and_a_copy(
    lake: LakeSession, tmp_path: Path
) -> None:
    lake.sql(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b STRING);"
        "INSERT INTO t VALUES (1, 10, 'x');"
        "CREATE STREAM s ON TABLE t;"
        "CREATE DYNAMIC TABLE d AS SELECT id, SUM(a) AS total FROM t GROUP BY id"
    )
    added = message(lake, "ALTER TABLE t ADD COLUMN c STRING COMMENT 'a note'")
    assert added.startswith("table t: added column c STRING (version ")
    # a file with the new column loads by place; the stream shows it from its version on
    volume = local_volume(lake, tmp_path / "landing")
    put(volume, "more.csv", "2,20,y,c2\n")
    lake.sql("COPY INTO t FROM VOLUME v USING CSV")
    assert rows(lake, "SELECT id, b, c FROM s") == [(2, "y", "c2")]
    assert "REFRESH FULL (t's columns changed at version" in message(
        lake, "REFRESH DYNAMIC TABLE d"
    )

    assert refused(lake, "ALTER TABLE t RENAME COLUMN a TO amount") == (
        "dynamic table d reads column a of table t: it cannot be renamed under it — first "
        "change or drop dynamic table d so that it no longer reads a"
    )
    assert refused(lake, "ALTER TABLE t DROP COLUMN id").startswith(
        "column id is in table t's primary key: it cannot be dropped"
    )
    assert refused(lake, "ALTER TABLE t RENAME COLUMN b TO bb").startswith(
        "stream s reads table t's changes, which cannot be read across this change (renamed "
        "column b to bb)"
    )
    assert refused(lake, "ALTER TABLE t ALTER COLUMN a TYPE SMALLINT").startswith(
        "column a of table t cannot change from INT to SMALLINT"
    )

    lake.sql(
        "DROP STREAM s;"
        "ALTER TABLE t RENAME COLUMN b TO bb;"
        "ALTER TABLE t DROP COLUMN c;"
        "ALTER TABLE t ALTER COLUMN a TYPE BIGINT;"
        "INSERT INTO t VALUES (3, 30000000000, 'z')"
    )
    assert refused(lake, "CREATE STREAM s2 ON TABLE t").startswith(
        "table t has had columns renamed or dropped: Delta's reader of net changes by row cannot"
    )
    assert rows(lake, "DESC t") == [
        ("id", "INT", None, 1, None),
        ("a", "BIGINT", None, None, None),
        ("bb", "STRING", None, None, None),
    ]
    assert rows(lake, "SELECT * FROM t ORDER BY id") == [
        (1, 10, "x"),
        (2, 20, "y"),
        (3, 30000000000, "z"),
    ]
    lake.sql(
        "CREATE STREAM s2 ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');"
        "INSERT INTO t VALUES (4, 40, 'w')"
    )
    assert rows(lake, "SELECT id, a, bb FROM s2") == [(4, 40, "w")]
    refreshed = message(lake, "REFRESH DYNAMIC TABLE d")
    assert "REFRESH FULL (t's columns changed at version" in refreshed
    assert "(changed column a to BIGINT) since the last refresh" in refreshed
    operations = [row[2] for row in rows(lake, "DESC HISTORY t")]
    for operation in ("ADD COLUMNS", "RENAME COLUMN", "DROP COLUMNS", "CHANGE COLUMN"):
        assert operation in operations

    assert rows(lake, "SELECT total FROM d ORDER BY id") == [(10,), (20,), (30000000000,), (40,)]
    assert message(lake, "TRUNCATE TABLE t").startswith("DELETE: 0 inserted, 0 updated, 4 deleted")
    assert rows(lake, "SELECT COUNT(*) FROM t") == [(0,)]
    assert message(lake, "REFRESH DYNAMIC TABLE d").startswith("REFRESH INCREMENTAL")
    assert rows(lake, "SELECT COUNT(*) FROM d") == [(0,)]


def test_a_crash_between_the_alter_and_its_record_is_made_good_from_the_log(
    lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake.sql("CREATE TABLE t (id INT, a INT); INSERT INTO t VALUES (1, 10)")
    crash_at(monkeypatch, SCHEMA_COMMITTED)
    with pytest.raises(Crash):
        lake.sql("ALTER TABLE t RENAME COLUMN a TO amount")
    monkeypatch.undo()
    assert [c.name for c in lake.catalog.get(TableEntry, "t").columns] == ["id", "a"]
    assert [row[0] for row in rows(lake, "DESC t")] == ["id", "amount"]  # as the log says
    entry = lake.catalog.get(TableEntry, "t")
    assert [c.name for c in entry.columns] == ["id", "amount"]
    assert entry.schema_change == "renamed column a to amount"
    # a retried ALTER finds the column renamed already
    assert refused(lake, "ALTER TABLE t RENAME COLUMN a TO amount").startswith(
        "table t has no column a"
    )
    assert rows(lake, "SELECT amount FROM t") == [(10,)]


def test_a_task_and_an_export_read_a_column_added_under_them(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT);"
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');"
        "CREATE TABLE copied (id INT, a INT, c STRING);"
        "CREATE STREAM s ON TABLE t;"
        "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r;"
        "INSERT INTO t VALUES (1, 10)"
    )
    lake.sql("ALTER TABLE t ADD COLUMN c STRING; UPDATE t SET c = 'x' WHERE id = 1")
    # a task created after the change names the new column; its stream shows it
    lake.sql("CREATE TASK k AS INSERT INTO copied SELECT id, a, c FROM s; EXECUTE TASK k")
    assert rows(lake, "SELECT * FROM copied") == [(1, 10, "x")]
    lake.sql(
        "EXPORT CHANGELOG e (START_TIMESTAMP_MILLIS => 0, END_TIMESTAMP_MILLIS => 9999999999999)"
    )
    assert rows(
        lake, "SELECT id, column_name, column_value, op_type FROM r ORDER BY version, column_name"
    ) == [
        (1, "a", "10", "U"),
        (1, "c", "x", "U"),  # the export's records carry the new column from its commit on
    ]


def test_an_optimize_after_a_cut_off_alter_records_the_alters_columns_first(
    lake: LakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake.sql("CREATE TABLE t (id INT); INSERT INTO t VALUES (1)")
    crash_at(monkeypatch, SCHEMA_COMMITTED)
    with pytest.raises(Crash):
        lake.sql("ALTER TABLE t ADD COLUMN note STRING")
    monkeypatch.undo()
    lake.sql("OPTIMIZE t")  # a newer version than the ALTER's, recorded after its columns
    entry = lake.catalog.get(TableEntry, "t")
    assert ([c.name for c in entry.columns], entry.schema_change) == (
        ["id", "note"],
        "added column note STRING",
    )
