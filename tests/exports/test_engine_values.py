"""How an export writes values: every type as a string, nested values as JSON, key-only sources."""

from __future__ import annotations

import base64
import json

from lake_assets.session import LakeSession
from tests.exports.export_helpers import commit_times, latest, ranged, records, rows, run
from tests.ingest_helpers import refused


def test_values_of_every_type_as_strings(lake: LakeSession) -> None:
    lake.sql(
        "CREATE TABLE ty (k INT, i INT, bi BIGINT, d DOUBLE, dec DECIMAL(10, 2), bo BOOLEAN, "
        "dt DATE, ts TIMESTAMP, bin BINARY, s STRING, PRIMARY KEY (k)); "
        "ALTER TABLE ty SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO ty VALUES (1, 7, 9000000000, 2.5, 12.3, true, DATE'2026-01-02', "
        "TIMESTAMP'2026-01-02 03:04:05.123', X'CAFE', 'é, \"x\"'), "
        "(2, -1, NULL, -0.125, -0.5, false, NULL, TIMESTAMP'2026-01-02 00:00:00', X'', '')"
    )
    inserted = latest(lake, "ty")
    # BINARY cleared: a DA; the same DOUBLE again: no record.
    lake.sql("UPDATE ty SET bin = NULL, d = 2.5, bi = 1 WHERE k = 1")
    times = commit_times(lake, "ty")
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE ty TO TABLE r")
    assert run(lake, ranged("e", times[inserted], times[inserted + 1] + 1))["records"] == 18
    first, second = times[inserted], times[inserted + 1]
    assert (
        sorted(records(lake, "r"), key=repr)
        == sorted(
            [
                (1, "i", first, "7", "U"),
                (1, "bi", first, "9000000000", "U"),
                (1, "d", first, "2.5", "U"),
                (1, "dec", first, "12.30", "U"),
                (1, "bo", first, "true", "U"),
                (1, "dt", first, "2026-01-02", "U"),
                (1, "ts", first, "2026-01-02 03:04:05.123", "U"),
                (1, "bin", first, "yv4=", "U"),
                (1, "s", first, 'é, "x"', "U"),
                (2, "i", first, "-1", "U"),
                (2, "d", first, "-0.125", "U"),
                (2, "dec", first, "-0.50", "U"),
                (2, "bo", first, "false", "U"),
                (2, "ts", first, "2026-01-02 00:00:00", "U"),
                (2, "bin", first, "", "U"),  # an empty value is a value, not NULL
                (2, "s", first, "", "U"),
                (1, "bin", second, None, "DA"),
                (1, "bi", second, "1", "U"),
            ],
            key=repr,
        )
        == sorted(records(lake, "r"), key=repr)
    )
    assert base64.b64decode("yv4=") == bytes.fromhex("CAFE")


def test_nested_values_of_a_dynamic_table_as_json(lake: LakeSession) -> None:
    """ARRAY and MAP columns (a table's own columns cannot be nested; a dynamic table's can):
    JSON text; a changed map is a U, an unchanged one no record. ROW_NUMBER makes every refresh
    a full one, which rewrites every row: the images are paired by key and compared."""
    lake.sql(
        "CREATE TABLE base (k INT, a INT, PRIMARY KEY (k)); "
        "ALTER TABLE base SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO base VALUES (1, 5), (2, 6); "
        "CREATE DYNAMIC TABLE d AS SELECT k, array(a, a + 1) AS arr, map('a', a) AS m, "
        "array(map('z', CAST(a AS STRING))) AS nest, ROW_NUMBER() OVER (ORDER BY k) AS rn "
        "FROM base; ALTER DYNAMIC TABLE d SET PRIMARY KEY (k); "
        "UPDATE base SET a = 7 WHERE k = 1; REFRESH DYNAMIC TABLE d"
    )
    times = commit_times(lake, "d")
    created, refreshed = max(times) - 1, max(times)
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE d TO TABLE r")
    result = run(lake, ranged("e", 0, times[refreshed] + 1))
    assert (result["first_version"], result["last_version"]) == (created, refreshed)
    first, second = times[created], times[refreshed]
    assert sorted(records(lake, "r"), key=repr) == sorted(
        [
            (1, "arr", first, "[5,6]", "U"),
            (1, "m", first, '{"a":5}', "U"),
            (1, "nest", first, '[{"z":"5"}]', "U"),
            (1, "rn", first, "1", "U"),
            (2, "arr", first, "[6,7]", "U"),
            (2, "m", first, '{"a":6}', "U"),
            (2, "nest", first, '[{"z":"6"}]', "U"),
            (2, "rn", first, "2", "U"),
            (1, "arr", second, "[7,8]", "U"),
            (1, "m", second, '{"a":7}', "U"),
            (1, "nest", second, '[{"z":"7"}]', "U"),
        ],
        key=repr,
    )
    assert json.loads('[{"z":"7"}]') == [{"z": "7"}]


def test_a_source_of_key_columns_only_exports_its_deletes(lake: LakeSession) -> None:
    """No other column: an insert has no column versions, a delete is one DR."""
    lake.sql(
        "CREATE TABLE t (k INT, PRIMARY KEY (k)); "
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true'); "
        "INSERT INTO t VALUES (1), (2); DELETE FROM t WHERE k = 1"
    )
    times = commit_times(lake, "t")
    deleted = max(times)
    lake.sql("CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    result = run(lake, ranged("e", 0, times[deleted] + 1))
    assert (result["records"], result["DR"]) == (1, 1)
    assert rows(lake, "SELECT * FROM r") == [(1, None, times[deleted], None, "DR")]


def test_a_key_column_named_as_a_record_column_is_refused_clearly(lake: LakeSession) -> None:
    """The records lead with the key's columns under their own names, then column_name,
    version, column_value and op_type: a key column of one of those names cannot be kept."""
    lake.sql(
        "CREATE TABLE t (version INT, a STRING, PRIMARY KEY (version)); "
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"
    )
    text = refused(lake, "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE r")
    assert "version" in text
    assert "changelog export e" in text
    assert "--debug" not in text  # not Spark's COLUMN_ALREADY_EXISTS passed through
