"""Tagged, fenced Delta commits, the one way anything here commits: a write carries a record of
what it did in its commit's userMetadata, Delta's idempotent writes (txnAppId/txnVersion) fence
two writers that acted on the same state, and the record is found again by its tag. Loads, DML
and refreshes commit this way, so a crash right after a commit loses no record of it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

from pyspark.sql import SparkSession

from lake_assets.core.delta import COMMIT_TAG_CONF, Commit, history, session_conf
from lake_assets.core.spark_errors import Failure, classify

_TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
# The record's field holding the transaction number its fenced commit used.
_TXN = "txn"


# A commit record's first key says what kind of write it describes; each kind names its own
# (`lake_load`, `lake_refresh` …). A statement's write (INSERT, UPDATE, MERGE …) is everyone's.
STATEMENT_MARKER = "lake_statement"


@dataclass(frozen=True)
class Fence:
    """A writer acted on a table as of `version` and commits as transaction `number` of
    `app_id`: Delta skips the commit, or refuses it when the two race, once a writer with the
    same app id has committed a number as high."""

    app_id: str
    version: int
    number: int


def new_record(marker: str, **fields: Any) -> dict[str, Any]:
    """A commit record with a fresh tag; `fields` say what the write did."""
    return {marker: 1, "tag": uuid.uuid4().hex, **fields}


def decode(user_metadata: str | None, marker: str) -> dict[str, Any] | None:
    """The record a commit carries, if it is one of `marker`'s kind."""
    if not user_metadata or not user_metadata.startswith(f'{{"{marker}"'):
        return None
    record = json.loads(user_metadata)
    record.setdefault("tag", record.get("id"))  # refreshes before 2026-11 tagged with "id"
    return record


def fence_at(
    spark: SparkSession | None, location: str, app_id: str, marker: str, version: int
) -> tuple[Fence, tuple[Commit, dict] | None]:
    """The fence of a writer that acted on the table as of `version`, and the newest commit of
    `marker`'s kind at or before it, with its record (the commits up to `version` never change,
    so this is the state the writer saw). The number follows that commit's: writers that saw the
    same newest one get the same number, so at most one of them commits however many other
    commits land between their reads, and a writer that saw another's commit gets a higher one.
    A commit from before numbers were recorded counts as its version, and with none of the kind
    in the history kept the number is the oldest version kept: a number is never more than its
    commit's version, so both are above any number committed before."""
    found, oldest = newest_record(spark, location, marker, version)
    if found is None:
        return Fence(app_id, version, oldest), None
    commit, record = found
    return Fence(app_id, version, record.get(_TXN, commit.version) + 1), found


def newest_record(
    spark: SparkSession | None, location: str, marker: str, version: int
) -> tuple[tuple[Commit, dict] | None, int]:
    """The newest commit of `marker`'s kind at or before `version`, with its record (None when
    the history kept has none), and the oldest version looked at."""
    oldest = version
    for commit in _newest_first(spark, location):
        if commit.version > version:
            continue
        record = decode(commit.user_metadata, marker)
        if record is not None:
            return (commit, record), commit.version
        oldest = commit.version
    return None, oldest


def _numbered(record: dict[str, Any], fence: Fence | None) -> str:
    """The userMetadata of a commit of `record`, with its transaction number when fenced."""
    return json.dumps(record if fence is None else {**record, _TXN: fence.number})


def writer_options(record: dict[str, Any], fence: Fence | None = None) -> dict[str, str]:
    """Options of a DataFrame write that commits `record`: the write's own, so that other
    threads of the session neither see nor change them."""
    options = {"userMetadata": _numbered(record, fence)}
    if fence is not None:
        options.update(txnAppId=fence.app_id, txnVersion=str(fence.number))
    return options


@contextmanager
def committing(
    spark: SparkSession,
    record: dict[str, Any],
    fence: Fence | None = None,
    conf: dict[str, str] | None = None,
) -> Iterator[None]:
    """SQL statements inside commit `record` (fenced, when a fence is given). SQL takes these
    only as session settings: the session's other threads wait while they are set."""
    settings = {COMMIT_TAG_CONF: _numbered(record, fence), **(conf or {})}
    if fence is not None:
        settings.update({_TXN_APP_CONF: fence.app_id, _TXN_VERSION_CONF: str(fence.number)})
    with session_conf(spark, settings):
        yield


def fence_lost(error: BaseException) -> bool:
    """Whether a fenced write failed because a writer with the same fence committed while it
    ran (Delta's ConcurrentTransactionException): it wrote nothing, like a skipped write."""
    return Failure.LOST_FENCE in classify(error)


def fenced_write(
    spark: SparkSession,
    location: str,
    record: dict[str, Any],
    fence: Fence,
    write: Callable[[], object],
) -> Commit | None:
    """Run `write`, which commits `record` under `fence`, and return its commit; None when
    another writer's commit under the same fence won (Delta skipped this one, or refused it)."""
    try:
        write()
    except Exception as error:
        if not fence_lost(error):
            raise
        return None
    return find(spark, location, record, after=fence.version)


def _newest_first(spark: SparkSession | None, location: str) -> Iterator[Commit]:
    """The history newest first, read in growing windows: a long one is not read in full."""
    limit = seen = 8
    commits = history(spark, location, limit)
    yield from commits
    while len(commits) == limit:
        limit *= 8
        commits = history(spark, location, limit)
        yield from commits[seen:]
        seen = limit


def commits_since(spark: SparkSession, location: str, version: int) -> list[Commit]:
    """The commits after `version`, newest first, and at least the newest one."""
    commits = _newest_first(spark, location)
    first = next(commits)
    if first.version <= version:
        return [first]
    return [first, *takewhile(lambda commit: commit.version > version, commits)]


def find(spark: SparkSession, location: str, record: dict[str, Any], after: int) -> Commit | None:
    """The commit after version `after` that carries `record`, or None when it never landed."""
    marker = next(iter(record))
    for commit in commits_since(spark, location, after):
        found = decode(commit.user_metadata, marker)
        if found is not None and found["tag"] == record["tag"]:
            return commit
    return None


def records(
    spark: SparkSession | None, location: str, marker: str
) -> Iterator[tuple[Commit, dict]]:
    """The commits carrying a record of `marker`'s kind, newest first, with their records
    (without Spark, `spark` None, for a table on a local filesystem)."""
    for commit in _newest_first(spark, location):
        record = decode(commit.user_metadata, marker)
        if record is not None:
            yield commit, record


def tags(spark: SparkSession | None, location: str) -> dict[str, int]:
    """Every record's tag in the table's history, whatever its kind, with its commit's version:
    what was written aside for a write (its quarantined rows) counts only once it committed."""
    found: dict[str, int] = {}
    for commit in _newest_first(spark, location):
        metadata = commit.user_metadata or ""
        if metadata.startswith('{"lake_') and (tag := json.loads(metadata).get("tag")):
            found[tag] = commit.version
    return found


def newest(spark: SparkSession | None, location: str, marker: str) -> tuple[Commit, dict] | None:
    """The newest commit carrying a record of `marker`'s kind, with its record."""
    return next(records(spark, location, marker), None)
