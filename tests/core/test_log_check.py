"""The check before every write, on hand-written Delta logs in a folder or in S3 (no Spark): a log
that lost or damaged commits the catalog saw is refused in one line naming the table and the
version; a log ahead of the catalog, or cleaned of old commits, is written on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.core.log_check import ensure_log_intact
from lake_assets.tables.entry import TableEntry
from tests.s3_server import aws_env, new_bucket


def table(tmp_path: Path, versions: range, seen: int | None) -> TableEntry:
    """A table whose log holds a commit of each of `versions`; the catalog saw `seen`."""
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    for version in versions:
        commit = {"commitInfo": {"timestamp": 1, "operation": "WRITE"}}
        add = {"add": {"path": f"part-{version}.parquet", "size": 1, "dataChange": True}}
        (log / f"{version:020d}.json").write_text(f"{json.dumps(commit)}\n{json.dumps(add)}\n")
    return TableEntry("t", str(tmp_path / "t"), (), version=seen)


def refusal(entry: TableEntry) -> str:
    with pytest.raises(LakeError) as caught:
        ensure_log_intact(entry)
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize(
    ("versions", "seen"),
    [
        (range(4), 3),  # intact, as the catalog saw it
        (range(6), 3),  # ahead: a crash after commits, before the catalog recorded them
        (range(5, 8), 6),  # older commits expired by log cleanup
        (range(2, 8), 0),  # the catalog's own version expired too
        (range(3), None),  # no version recorded yet: only the newest commit is read
    ],
)
def test_an_intact_log_is_written_on(tmp_path: Path, versions: range, seen: int | None) -> None:
    ensure_log_intact(table(tmp_path, versions, seen))


def test_a_log_whose_newest_commits_are_gone_is_refused(tmp_path: Path) -> None:
    entry = table(tmp_path, range(3), seen=3)
    log = f"{entry.location}/_delta_log"
    assert refusal(entry) == (
        "table t's log ends at version 2 but version 3 was committed: its newest commits are "
        f"missing — restore {log}/00000000000000000003.json from a backup; without one, drop "
        "table t and create it again (the rows its log still holds can be read first)"
    )
    more = table(tmp_path / "more", range(1), seen=3)
    assert (
        f"restore {more.location}/_delta_log/00000000000000000001.json to "
        "00000000000000000003.json from a backup" in refusal(more)
    )
    gone = table(tmp_path / "gone", range(0), seen=0)
    assert refusal(gone).startswith(
        "table t's log has no commits but version 0 was committed: its newest commits are missing"
    )


def test_a_gap_from_the_catalogs_version_on_is_refused(tmp_path: Path) -> None:
    entry = table(tmp_path, range(6), seen=2)
    Path(entry.location, "_delta_log", f"{4:020d}.json").unlink()
    assert refusal(entry) == (
        "table t's log lacks version 4 (its newest is 5): a commit is missing — restore "
        f"{entry.location}/_delta_log/00000000000000000004.json from a backup before writing t "
        "again"
    )


@pytest.mark.parametrize("damage", ["half", "empty", "bytes"])
def test_a_damaged_commit_from_the_catalogs_version_on_is_refused(
    tmp_path: Path, damage: str
) -> None:
    entry = table(tmp_path, range(5), seen=3)
    commit = Path(entry.location, "_delta_log", f"{3:020d}.json")
    text = commit.read_bytes()
    commit.write_bytes({"half": text[: len(text) // 4], "empty": b"", "bytes": b"\xff\xfe"}[damage])
    assert refusal(entry) == (
        "table t's commit at version 3 is damaged: it does not parse — restore "
        f"{commit} from a backup before reading or writing t again"
    )
    # Only the commits from the catalog's version on are read, to stay cheap.
    ensure_log_intact(TableEntry("t", entry.location, (), version=4))


def test_a_log_in_s3_is_checked_as_one_on_disk(
    tmp_path: Path, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = table(tmp_path, range(4), seen=3)
    Path(local.location, "_delta_log", f"{3:020d}.json").write_text('{"commitInfo": {')
    s3, bucket = new_bucket(s3_endpoint)
    for file in Path(local.location, "_delta_log").iterdir():
        s3.upload_file(str(file), bucket, f"lake/t/_delta_log/{file.name}")
    for name, value in aws_env(s3_endpoint).items():
        monkeypatch.setenv(name, value)
    remote = f"s3a://{bucket}/lake/t"

    assert refusal(TableEntry("t", remote, (), version=3)) == (
        "table t's commit at version 3 is damaged: it does not parse — restore "
        f"{remote}/_delta_log/00000000000000000003.json from a backup before reading or writing "
        "t again"
    )
    assert refusal(TableEntry("t", remote, (), version=5)).startswith(
        "table t's log ends at version 3 but version 5 was committed"
    )
