"""Small Spark SQL helpers for path-addressed Delta tables."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import unquote
from weakref import WeakKeyDictionary

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from pyspark.sql import SparkSession

from lake_assets.core.errors import LakeError

COMMIT_TAG_CONF = "spark.databricks.delta.commitInfo.userMetadata"
# "none": a MERGE reads its source as given (a refresh checkpoints its source itself).
MATERIALIZE_SOURCE_CONF = "spark.databricks.delta.merge.materializeSource"
# Spark's settings for evaluating expressions without generating and compiling code.
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

_COMMIT_FILE = re.compile(r"\d{20}\.json")
# Object stores whose Delta logs are read without Spark.
_OBJECT_SCHEMES = ("s3a", "s3", "s3n")


class Commit(NamedTuple):
    """One Delta commit as the history shows it (timestamps are naive UTC, like Spark's)."""

    version: int
    timestamp: datetime
    operation: str | None
    operation_metrics: dict[str, str]
    user_metadata: str | None


# Delta's operationMetrics keys for rows inserted, updated and deleted, per commit operation.
_ROW_METRICS = {
    "WRITE": ("numOutputRows", None, None),
    "CREATE TABLE AS SELECT": ("numOutputRows", None, None),
    "UPDATE": (None, "numUpdatedRows", None),
    "DELETE": (None, None, "numDeletedRows"),
    "MERGE": ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"),
    "OPTIMIZE": (None, None, None),
}


# One lock per session: its settings are seen by every thread that shares it.
_SESSION_LOCKS: WeakKeyDictionary[SparkSession, threading.RLock] = WeakKeyDictionary()
_SESSION_LOCKS_GUARD = threading.Lock()


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings for the work inside only: the values before are put back after. Other
    threads sharing the session wait meanwhile, so that a commit tag or fence set for this work
    never lands on theirs, nor theirs on this."""
    with _SESSION_LOCKS_GUARD:
        lock = _SESSION_LOCKS.setdefault(spark, threading.RLock())
    with lock:
        before = {key: spark.conf.get(key, None) for key in settings}
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, previous in before.items():
                if previous is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, previous)


# MERGEs are SQL on these references, not delta-spark's DeltaTable.merge builder: over Spark
# Connect the builder needs Delta's Connect plugin on the server, which delta-spark 4.4 does not
# ship for Spark 4.2 (the server answers NO_HANDLER_FOR_EXTENSION for delta.connect.DeltaRelation).
def delta_ref(location: str) -> str:
    """A Spark SQL reference to the Delta table at `location`."""
    return "delta.`" + location.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def history(spark: SparkSession | None, location: str, limit: int | None = None) -> list[Commit]:
    """Commit history, newest first. A table on a local filesystem or in S3 is read straight
    from its transaction log (no Spark job: a refresh or load asks this several times, and
    sensors, which pass no `spark`, too); others through DESCRIBE HISTORY."""
    # Logs are parsed by hand. deltalake (delta-rs 1.6.6) returns the same commits for our tables
    # (deletion vectors, row tracking, v2 checkpoints included) but costs ~100 ms to import and
    # 4-12 ms per table opened against ~1 ms here.
    log = _log(location)
    if log is not None:
        return [_log_commit(log, version) for version in log.versions()[:limit]]
    if spark is None:
        raise LakeError(
            f"the Delta log at {location} is neither local nor in S3: reading it needs Spark",
            "read it in a run, not in a sensor",
        )
    suffix = f" LIMIT {int(limit)}" if limit else ""
    return [
        Commit(
            row["version"],
            row["timestamp"],
            row["operation"],
            dict(row["operationMetrics"] or {}),
            row["userMetadata"],
        )
        for row in spark.sql(f"DESCRIBE HISTORY {delta_ref(location)}{suffix}").collect()
    ]


def commits_from(spark: SparkSession | None, location: str, version: int) -> Iterator[Commit]:
    """The commits from `version` on, oldest first; a log read without Spark is read one commit
    at a time, so that a reader that stops early opens no more of it."""
    log = _log(location)
    if log is None:
        yield from reversed([c for c in history(spark, location) if c.version >= version])
        return
    for at in sorted(v for v in log.versions() if v >= version):
        yield _log_commit(log, at)


def latest_version(spark: SparkSession, location: str) -> int:
    return history(spark, location, 1)[0].version


def is_table(spark: SparkSession, location: str) -> bool:
    """Whether a Delta table's log is at `location` itself (Delta's own check also finds one in
    a folder above it)."""
    log = _log(location)
    if isinstance(log, _LocalLog):
        return log.folder.is_dir() and bool(log.versions())
    if log is not None:
        return bool(log.versions())
    try:
        latest_version(spark, location)
    except Exception:
        return False
    return True


def table_properties(
    spark: SparkSession, location: str, version: int | None = None
) -> dict[str, str]:
    """The table's properties at `version` (None: now). The log's checksum file for that version
    holds them (no Spark job: a stream reads them every statement); without one, SHOW
    TBLPROPERTIES answers, with Delta's protocol keys besides."""
    log = _log(location)
    if log is not None:
        at = version if version is not None else log.versions()[0]
        try:
            checksum = json.loads(log.text(f"{at:020d}.crc") or "")
            return dict(checksum["metadata"].get("configuration") or {})
        except (KeyError, ValueError):
            pass
    at_version = location if version is None else f"{location}@v{int(version)}"
    return {
        row["key"]: row["value"]
        for row in spark.sql(f"SHOW TBLPROPERTIES {delta_ref(at_version)}").collect()
    }


def log_actions(location: str, version: int) -> list[dict[str, Any]] | None:
    """The actions of one commit, read without Spark; None for other stores or an expired one."""
    log = _log(location)
    text = None if log is None else log.text(f"{version:020d}.json")
    return None if text is None else [json.loads(line) for line in text.splitlines() if line]


def log_versions(location: str) -> list[int] | None:
    """The table's commit versions, newest first, read without Spark (sensors ask this every few
    seconds); None for stores other than a local filesystem and S3."""
    log = _log(location)
    return None if log is None else log.versions()


def local_table(location: str) -> Path | None:
    """The folder of a Delta table on a local filesystem; None for other stores."""
    log = _log(location)
    return log.folder.parent if isinstance(log, _LocalLog) else None


def missing_files(location: str, paths: Iterable[str]) -> list[str]:
    """Which of a table's data files, named as its log names them (relative and URL-encoded, or
    absolute), are gone (VACUUM removed them); none are known gone in stores other than a local
    filesystem and S3."""
    log = _log(location)
    if isinstance(log, _LocalLog):
        root = log.folder.parent
        return [path for path in paths if not (root / _file_path(unquote(path))).exists()]
    if isinstance(log, _ObjectLog):
        table = log.prefix.removesuffix("_delta_log/")
        present = set(log.keys(table))
        return [path for path in paths if log.key(table, unquote(path)) not in present]
    return []


def remove_location(location: str) -> None:
    """Delete everything under a location (a dropped table, a staging folder), on the local
    filesystem or in S3."""
    log = _log(location)
    if isinstance(log, _LocalLog):
        shutil.rmtree(log.folder.parent, ignore_errors=True)
    elif isinstance(log, _ObjectLog) and (folder := log.prefix.removesuffix("_delta_log/")):
        log.remove(folder)


def fetch_folder(location: str, into: Path) -> None:
    """Copy the files directly in a folder of the warehouse, local or in S3, into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    scheme, _, rest = location.partition("://")
    if rest and scheme in _OBJECT_SCHEMES:
        bucket, _, key = rest.partition("/")
        folder = _ObjectLog(bucket, key.strip("/") + "/")
        for name in folder.keys(folder.prefix):
            if "/" not in name[len(folder.prefix) :]:
                _s3().download_file(bucket, name, str(into / name[len(folder.prefix) :]))
        return
    for path in _file_path(location).iterdir():
        if path.is_file():
            shutil.copyfile(path, into / path.name)


class _Log(Protocol):
    """A Delta transaction log read without Spark."""

    def versions(self) -> list[int]:
        """The versions of its commit files, newest first."""
        ...

    def text(self, name: str) -> str | None:
        """One of its files, or None when it is not there (expired, or never written)."""
        ...


@dataclass(frozen=True)
class _LocalLog:
    folder: Path

    def versions(self) -> list[int]:
        names = (entry.name for entry in os.scandir(self.folder))
        return sorted(
            (int(name[:-5]) for name in names if _COMMIT_FILE.fullmatch(name)), reverse=True
        )

    def text(self, name: str) -> str | None:
        try:
            return (self.folder / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None


@dataclass(frozen=True)
class _ObjectLog:
    """A log in S3, reached with the standard AWS variables (AWS_ENDPOINT_URL and the
    credentials), as Spark's S3A connector reaches the warehouse."""

    bucket: str
    prefix: str

    def versions(self) -> list[int]:
        names = (key[len(self.prefix) :] for key in self.keys(self.prefix))
        return sorted(
            (int(name[:-5]) for name in names if _COMMIT_FILE.fullmatch(name)), reverse=True
        )

    def keys(self, prefix: str) -> Iterator[str]:
        """The keys of every object under `prefix`."""
        pages = _s3().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return (item["Key"] for page in pages for item in page.get("Contents", ()))

    def key(self, table: str, path: str) -> str:
        """The object key of a file the log names, relative to the table or as a URL."""
        scheme, _, rest = path.partition("://")
        if rest and scheme in _OBJECT_SCHEMES:
            return rest.partition("/")[2]
        return table + path

    def remove(self, prefix: str) -> None:
        """Delete every object under `prefix`, a thousand at a time (S3's batch limit)."""
        keys = list(self.keys(prefix))
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            _s3().delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})

    def text(self, name: str) -> str | None:
        try:
            answer = _s3().get_object(Bucket=self.bucket, Key=self.prefix + name)
        except _s3().exceptions.NoSuchKey:
            return None
        return answer["Body"].read().decode("utf-8")


def _s3() -> Any:
    """An S3 client through dagster-aws, configured from the environment as S3A is (one per
    endpoint)."""
    env = os.environ
    return _s3_client(env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"))


@functools.cache
def _s3_client(endpoint: str | None) -> Any:
    from dagster_aws.s3 import S3Resource  # imported on use: local lakes never need it

    return S3Resource(endpoint_url=endpoint).get_client()


def _log(location: str) -> _Log | None:
    """The table's log when it is on a local filesystem or in S3."""
    scheme, _, rest = location.partition("://")
    if rest and scheme in _OBJECT_SCHEMES:
        bucket, _, key = rest.partition("/")
        return _ObjectLog(bucket, f"{key.strip('/')}/_delta_log/".lstrip("/"))
    if rest and scheme != "file":
        return None
    path = _file_path(location)
    return _LocalLog(path / "_delta_log") if path.is_absolute() else None


def _file_path(path: str) -> Path:
    """A local path or file: URI as a path (an absolute one replaces the root it joins)."""
    return Path(path.removeprefix("file://").removeprefix("file:"))


def _log_commit(log: _Log, version: int) -> Commit:
    info: dict[str, Any] = {}
    for line in (log.text(f"{version:020d}.json") or "").splitlines():
        if line.startswith('{"commitInfo"'):
            info = json.loads(line)["commitInfo"]
            break
    stamp = datetime.fromtimestamp(info.get("timestamp", 0) / 1000, tz=UTC).replace(tzinfo=None)
    return Commit(
        version,
        stamp,
        info.get("operation"),
        dict(info.get("operationMetrics") or {}),
        info.get("userMetadata"),
    )


def row_count(spark: SparkSession, location: str, version: int) -> int:
    """Rows at one commit version, from the files' statistics (a local table's read by delta-rs
    in milliseconds; else Delta answers COUNT(*) from them in a Spark job)."""
    folder = local_table(location)
    counted = None if folder is None else _counted_rows(folder, version)
    if counted is not None:
        return counted
    return spark.sql(
        f"SELECT COUNT(*) FROM {delta_ref(location)} VERSION AS OF {int(version)}"
    ).collect()[0][0]


def _counted_rows(folder: Path, version: int) -> int | None:
    """The rows of a local table's files at `version` by their statistics; None when a file has
    none, when deletion vectors may hide some of its rows, or when delta-rs cannot read it."""
    try:
        table = DeltaTable(str(folder), version=version)
        if "deletionVectors" in (table.protocol().reader_features or ()):
            return None
        counts = pa.chunked_array(table.get_add_actions(flatten=True).column("num_records"))
    except (DeltaError, OSError):
        return None
    return None if counts.null_count else int(pc.sum(counts).as_py() or 0)


def row_changes(operation: str, metrics: dict[str, str] | None) -> tuple[int, int, int] | None:
    """Rows (inserted, updated, deleted) by one commit, or None when its metrics do not say."""
    keys = _ROW_METRICS.get(operation)
    metrics = metrics or {}
    if keys is None or any(key is not None and key not in metrics for key in keys):
        return None
    inserted, updated, deleted = (int(metrics[key]) if key else 0 for key in keys)
    return inserted, updated, deleted
