"""Where a stream starts: AT a version or a time, ALTER STREAM … SET OFFSET, and refused offsets."""

from __future__ import annotations

from lake_assets.session import LakeSession
from tests.ingest_helpers import refused
from tests.streams.stream_helpers import (
    TABLE,
    changes,
    desc,
    history,
    latest,
    message,
    rows,
    tracked,
)


def test_at_version_and_at_timestamp(lake: LakeSession) -> None:
    v1 = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("INSERT INTO t VALUES (2, 'b', 2)")
    v2 = latest(lake, "t")
    lake.sql("INSERT INTO t VALUES (3, 'c', 3)")
    v3 = latest(lake, "t")
    commits = history(lake, "t")
    between = commits[v2][0] + (commits[v3][0] - commits[v2][0]) / 2

    lake.sql(f"CREATE TABLE STREAM by_version ON TABLE t AT (VERSION => {v1})")
    lake.sql(f"CREATE TABLE STREAM by_time ON TABLE t AT (TIMESTAMP => '{commits[v2][0]}')")
    lake.sql(f"CREATE TABLE STREAM by_between ON TABLE t AT (TIMESTAMP => '{between}')")
    assert desc(lake, "by_version")["offset_version"] == v1
    assert changes(lake, "by_version") == [("INSERT", v2, 2, "b", 2), ("INSERT", v3, 3, "c", 3)]
    for stream in ("by_time", "by_between"):
        assert desc(lake, stream)["offset_version"] == v2
        assert changes(lake, stream) == [("INSERT", v3, 3, "c", 3)]


def test_at_a_time_before_the_first_commit_is_refused(lake: LakeSession) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    assert refused(
        lake, "CREATE TABLE STREAM old ON TABLE t AT (TIMESTAMP => '2000-01-01 00:00:00')"
    ).startswith("t has no version at or before 2000-01-01 00:00:00 — pick a time from ")


def test_a_time_in_the_future_is_refused_not_taken_as_the_latest_version(
    lake: LakeSession,
) -> None:
    tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    offset = desc(lake, "s")["offset_version"]
    future = "2999-01-01 00:00:00"
    refusal = (
        f"t has no version at {future}: that time is in the future — pick a time that has "
        "passed; for the newest version leave out AT, or use ALTER STREAM … SET OFFSET LATEST"
    )
    assert refused(lake, f"CREATE TABLE STREAM later ON TABLE t AT (TIMESTAMP => '{future}')") == (
        refusal
    )
    assert refused(lake, f"ALTER STREAM s SET OFFSET (TIMESTAMP => '{future}')") == refusal
    assert [row[0] for row in rows(lake, "SHOW STREAMS")] == ["s"]
    assert desc(lake, "s")["offset_version"] == offset


def test_an_append_only_stream_at_a_version_before_change_tracking_is_refused(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    assert refused(
        lake,
        "CREATE TABLE STREAM s ON TABLE t AT (VERSION => 0) "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')",
    ) == (
        "t had no change tracking at version 0 — "
        "pick a version from when change tracking was on, or leave out AT"
    )
    assert rows(lake, "SHOW STREAMS") == []


def test_a_standard_stream_at_a_version_before_change_tracking_is_refused(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    assert refused(lake, "CREATE TABLE STREAM s ON TABLE t AT (VERSION => 1)") == (
        "t had no change tracking at version 1 — "
        "pick a version from when change tracking was on, or leave out AT"
    )


def test_a_refused_create_stream_changes_nothing(lake: LakeSession) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    before = history(lake, "t")
    refused(
        lake,
        "CREATE TABLE STREAM s ON TABLE t AT (VERSION => 0) "
        "WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')",
    )
    assert history(lake, "t") == before


def test_a_stream_at_the_latest_version_of_an_untracked_table_is_refused_and_changes_nothing(
    lake: LakeSession,
) -> None:
    lake.sql(f"{TABLE}; INSERT INTO t VALUES (1, 'a', 1)")
    before = history(lake, "t")
    assert refused(lake, f"CREATE TABLE STREAM s ON TABLE t AT (VERSION => {latest(lake, 't')})")
    assert history(lake, "t") == before
    assert rows(lake, "SHOW TABLES")[0][2] is False
    assert rows(lake, "SHOW STREAMS") == []


def test_an_offset_is_refused_when_tracking_was_off_at_any_version_after_it(
    lake: LakeSession,
) -> None:
    on = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("ALTER TABLE t SET PROPERTIES ('change_tracking' = 'false')")
    off = latest(lake, "t")
    lake.sql(
        "INSERT INTO t VALUES (2, 'b', 2); "
        "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"
    )
    back = latest(lake, "t")
    expected = (
        f"t had no change tracking at version {off} — "
        "pick a version from when change tracking was on, or leave out AT"
    )
    assert refused(lake, f"CREATE TABLE STREAM s2 ON TABLE t AT (VERSION => {on})") == expected
    assert refused(lake, f"ALTER STREAM s SET OFFSET (VERSION => {on})") == expected
    assert message(lake, f"CREATE TABLE STREAM s2 ON TABLE t AT (VERSION => {back})") == (
        f"created stream s2 on table t at version {back}"
    )


def test_alter_stream_set_offset(lake: LakeSession) -> None:
    v1 = tracked(lake, "INSERT INTO t VALUES (1, 'a', 1)")
    lake.sql("INSERT INTO t VALUES (2, 'b', 2)")
    v2 = latest(lake, "t")
    commits = history(lake, "t")
    created = desc(lake, "s")["offset_version"]

    assert message(lake, f"ALTER STREAM s SET OFFSET (VERSION => {v1})") == (
        f"stream s is now at version {v1} (was {created})"
    )
    assert changes(lake, "s") == [("INSERT", v2, 2, "b", 2)]
    lake.sql(f"ALTER STREAM s SET OFFSET (TIMESTAMP => '{commits[created][0]}')")
    assert desc(lake, "s")["offset_version"] == created
    assert changes(lake, "s") == [("INSERT", v1, 1, "a", 1), ("INSERT", v2, 2, "b", 2)]
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    assert desc(lake, "s")["offset_version"] == v2
    assert changes(lake, "s") == []
    assert refused(lake, "ALTER STREAM s SET OFFSET (VERSION => 99)") == (
        f"t has no version 99 — pick a version from 0 to {v2}"
    )
    assert refused(lake, "ALTER STREAM nope SET OFFSET LATEST").startswith(
        "stream nope does not exist — "
    )
