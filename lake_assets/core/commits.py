"""Tagged, fenced Delta commits, the one way anything here commits: a write carries a record of
what it did in its commit's userMetadata, Delta's idempotent writes (txnAppId/txnVersion) fence
two writers that read the same version, and the record is found again by its tag. Loads, DML and
refreshes commit this way, so a crash right after a commit loses no record of it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from itertools import takewhile
from typing import Any

from pyspark.sql import SparkSession

from lake_assets.core.delta import COMMIT_TAG_CONF, Commit, history, session_conf

_TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"


class Marker(StrEnum):
    """What kind of write a commit record describes: its first key."""

    LOAD = "lake_load"
    REFRESH = "lake_refresh"
    STATEMENT = "lake_statement"
    DIRECTORY = "lake_directory"
    KAFKA = "lake_kafka"
    EXPORT = "lake_export"


@dataclass(frozen=True)
class Fence:
    """A writer read version `after` of a table: Delta skips its write if another writer with the
    same `app_id` has committed a transaction version as high since."""

    app_id: str
    after: int


def new_record(marker: Marker, **fields: Any) -> dict[str, Any]:
    """A commit record with a fresh tag; `fields` say what the write did."""
    return {marker.value: 1, "tag": uuid.uuid4().hex, **fields}


def decode(user_metadata: str | None, marker: Marker) -> dict[str, Any] | None:
    """The record a commit carries, if it is one of `marker`'s kind."""
    if not user_metadata or not user_metadata.startswith(f'{{"{marker.value}"'):
        return None
    record = json.loads(user_metadata)
    record.setdefault("tag", record.get("id"))  # refreshes before 2026-11 tagged with "id"
    return record


def writer_options(record: dict[str, Any], fence: Fence | None = None) -> dict[str, str]:
    """Options of a DataFrame write that commits `record`."""
    options = {"userMetadata": json.dumps(record)}
    if fence is not None:
        options.update(txnAppId=fence.app_id, txnVersion=str(fence.after + 1))
    return options


@contextmanager
def committing(
    spark: SparkSession,
    record: dict[str, Any],
    fence: Fence | None = None,
    conf: dict[str, str] | None = None,
) -> Iterator[None]:
    """SQL statements inside commit `record` (fenced, when a fence is given)."""
    settings = {COMMIT_TAG_CONF: json.dumps(record), **(conf or {})}
    if fence is not None:
        settings.update({_TXN_APP_CONF: fence.app_id, _TXN_VERSION_CONF: str(fence.after + 1)})
    with session_conf(spark, settings):
        yield


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
    marker = Marker(next(iter(record)))
    for commit in commits_since(spark, location, after):
        found = decode(commit.user_metadata, marker)
        if found is not None and found["tag"] == record["tag"]:
            return commit
    return None


def records(
    spark: SparkSession | None, location: str, marker: Marker
) -> Iterator[tuple[Commit, dict]]:
    """The commits carrying a record of `marker`'s kind, newest first, with their records
    (without Spark, `spark` None, for a table on a local filesystem)."""
    for commit in _newest_first(spark, location):
        record = decode(commit.user_metadata, marker)
        if record is not None:
            yield commit, record


def newest(spark: SparkSession | None, location: str, marker: Marker) -> tuple[Commit, dict] | None:
    """The newest commit carrying a record of `marker`'s kind, with its record."""
    return next(records(spark, location, marker), None)
