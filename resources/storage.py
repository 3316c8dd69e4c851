"""Object storage behind volumes: a local directory or an S3-compatible bucket, one interface."""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from botocore.exceptions import ClientError

from lake_assets.core.errors import LakeError

# Names that writers use for files still being written; they are never read.
_IN_PROGRESS_SUFFIXES = (".tmp", ".partial", ".crdownload", "._COPYING_", ".inprogress")
# Bucket names of S3, OSS and COS: letters, digits, '.', '-' and '_', no folder of their own.
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True)
class FileInfo:
    relative_path: str
    size: int
    last_modified: datetime
    etag: str
    url: str


def inside(relative: str, what: str = "path") -> str:
    """Normalise a path relative to a volume ('/' is its root); refuse any path that leaves it."""
    parts = [part for part in relative.replace("\\", "/").strip().split("/") if part]
    if ".." in parts:
        raise LakeError(
            f"{what} '{relative}' leaves the volume", "use a path inside the volume, without '..'"
        )
    cleaned = posixpath.normpath("/".join(parts)) if parts else ""
    return "" if cleaned == "." else cleaned


def _folder_name(text: str) -> str:
    """`text` as one folder name of the local cache: itself when plainly one, else its digest
    (an ETag comes from the server, which may say anything)."""
    if _PLAIN.fullmatch(text):
        return text
    return hashlib.sha256(text.encode()).hexdigest()


def is_visible(relative: str) -> bool:
    """Hidden, bookkeeping and half-written files are not data."""
    name = posixpath.basename(relative)
    return not (name.startswith((".", "_")) or name.endswith(_IN_PROGRESS_SUFFIXES))


class VolumeStore(Protocol):
    def list(self, prefix: str = "", recursive: bool = True) -> list[FileInfo]: ...
    def stat(self, relative: str) -> FileInfo | None: ...
    def local_path(self, relative: str) -> Path: ...
    def spark_path(self, relative: str) -> str: ...
    def spark_options(self) -> dict[str, str]: ...
    def put(self, source: Path, relative: str) -> None: ...
    def delete(self, relative: str) -> None: ...


class LocalStore:
    """A volume on this machine's filesystem (`file:///abs/path/`). Links are no part of it:
    listings skip them and a path through one is refused, so that every read, listing, stat,
    put and delete stays under the location as resolved when the store was opened."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def contained(self, relative: str, what: str = "path") -> Path:
        """The file or folder `relative` names, refused when it leaves the volume textually
        ('..') or through a link: once resolved it must be itself."""
        path = self.root / inside(relative, what)
        if path.resolve() != path:
            raise LakeError(
                f"{what} '{relative}' goes through a link in the volume",
                "use a path inside the volume that is no link: links are not followed",
            )
        return path

    def list(self, prefix: str = "", recursive: bool = True) -> list[FileInfo]:
        base = self.contained(prefix, "SUBDIRECTORY")
        files = []
        for folder, folders, names in os.walk(base):
            location = Path(folder)
            # os.walk descends into no link; hidden folders hold no data
            folders[:] = [folder for folder in folders if recursive and is_visible(folder)]
            for name in names:
                path = location / name
                relative = path.relative_to(self.root).as_posix()
                if not all(map(is_visible, relative.split("/"))) or path.is_symlink():
                    continue
                if path.is_file():
                    files.append(self._info(path, relative))
        return sorted(files, key=lambda info: info.relative_path)

    def stat(self, relative: str) -> FileInfo | None:
        path = self.contained(relative)
        return self._info(path, inside(relative)) if path.is_file() else None

    @staticmethod
    def _info(path: Path, relative: str) -> FileInfo:
        stat = path.stat()
        return FileInfo(
            relative_path=relative,
            size=stat.st_size,
            last_modified=datetime.fromtimestamp(stat.st_mtime, UTC),
            etag=f"{stat.st_size:x}-{stat.st_mtime_ns:x}",
            url=path.as_uri(),
        )

    def local_path(self, relative: str) -> Path:
        return self.contained(relative)

    def spark_path(self, relative: str) -> str:
        """Where Spark reads the file: in place."""
        return str(self.local_path(relative))

    def spark_options(self) -> dict[str, str]:
        return {}

    def put(self, source: Path, relative: str) -> None:
        """Copy to a staging file of an unguessable name beside the target (no link can wait
        there) and rename it into place: readers never see a half-written file."""
        target = self.contained(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target = self.contained(relative)  # a link swapped in while the folders were made
        staging = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
        shutil.copyfile(source, staging)
        staging.replace(target)

    def delete(self, relative: str) -> None:
        self.contained(relative).unlink(missing_ok=True)


class S3Store:
    """A volume in an S3-compatible bucket. Spark reads its objects in place through S3A with
    the bucket's `s3a` settings when given (a cluster's executors), else local copies kept under
    a cache folder (faster for a local master: bench/s3_volume_reads.py)."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        prefix: str,
        cache: Path,
        s3a: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/"
        self.cache = cache
        self.s3a = s3a

    def _objects(self, prefix: str, recursive: bool) -> Iterator[dict[str, Any]]:
        paginator = self.client.get_paginator("list_objects_v2")
        extra = {} if recursive else {"Delimiter": "/"}
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix, **extra):
            yield from page.get("Contents", [])

    def list(self, prefix: str = "", recursive: bool = True) -> list[FileInfo]:
        folder = inside(prefix, "SUBDIRECTORY")
        files = []
        for item in self._objects(f"{folder}/" if folder else "", recursive):
            relative = item["Key"][len(self.prefix) :]
            if not relative or item["Key"].endswith("/"):
                continue
            if not all(map(is_visible, relative.split("/"))):
                continue
            files.append(self.file_info(relative, item["Size"], item["LastModified"], item["ETag"]))
        return sorted(files, key=lambda info: info.relative_path)

    def file_info(self, relative: str, size: int, last_modified: datetime, etag: str) -> FileInfo:
        """What a listing, a HEAD or an event says of an object, with the URL load records use;
        its time in whole seconds, as HEAD gives it (some servers list milliseconds), so that
        one version of an object has one time whichever way it was seen."""
        return FileInfo(
            relative_path=relative,
            size=size,
            last_modified=last_modified.astimezone(UTC).replace(microsecond=0),
            etag=etag.strip('"'),
            url=f"s3://{self.bucket}/{self.prefix}{relative}",
        )

    def relative(self, bucket: str, key: str) -> str | None:
        """The volume path of an object key; None for keys outside the volume or not data."""
        if bucket != self.bucket or not key.startswith(self.prefix) or key.endswith("/"):
            return None
        relative = key[len(self.prefix) :]
        try:
            cleaned = inside(relative)
        except LakeError:
            return None
        if cleaned != relative or not all(map(is_visible, relative.split("/"))):
            return None
        return relative

    def stat(self, relative: str) -> FileInfo | None:
        """The object as it is now, or None when it is gone."""
        key = self.prefix + inside(relative)
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if error.response["Error"].get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise LakeError(
                f"cannot read s3://{self.bucket}/{key}: {error.response['Error'].get('Message')}",
                "check that the connection's credentials may read it",
            ) from None
        size, modified, etag = head["ContentLength"], head["LastModified"], head["ETag"]
        return self.file_info(inside(relative), size, modified, etag)

    def local_path(self, relative: str) -> Path:
        """A local copy of the object as it is now: the cache is keyed by the object's ETag."""
        key = self.prefix + inside(relative)
        try:
            etag = self.client.head_object(Bucket=self.bucket, Key=key)["ETag"].strip('"')
        except ClientError as error:
            raise LakeError(
                f"cannot read s3://{self.bucket}/{key}: {error.response['Error'].get('Message')}",
                "check that the file exists and the connection's credentials may read it",
            ) from None
        target = self.cache / self.bucket / _folder_name(etag) / key
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = target.with_name(f".{target.name}.partial")
            self.client.download_file(self.bucket, key, str(staging))
            staging.replace(target)
        return target

    def spark_path(self, relative: str) -> str:
        if self.s3a is None:
            return str(self.local_path(relative))
        return f"s3a://{self.bucket}/{self.prefix}{inside(relative)}"

    def spark_options(self) -> dict[str, str]:
        return dict(self.s3a or {})

    def put(self, source: Path, relative: str) -> None:
        self.client.upload_file(str(source), self.bucket, self.prefix + inside(relative))

    def delete(self, relative: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.prefix + inside(relative))


def split_location(location: str) -> tuple[str, str, str]:
    """(scheme, bucket or '', path) of a volume LOCATION; bucket roots are refused, and so is a
    file:// location with a host, a query or a '..' segment, which would not say where it is."""
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme == "file":
        path = parsed.path
        if parsed.netloc.lower() not in ("", "localhost") or parsed.query or parsed.fragment:
            raise LakeError(
                f"LOCATION '{location}' names a host, a query or a fragment",
                "a LOCAL volume is on this machine: use file:///absolute/path/",
            )
        if ".." in path.split("/"):
            raise LakeError(
                f"LOCATION '{location}' contains '..'",
                "write the directory's absolute path without '..'",
            )
        if not path.startswith("/") or path.rstrip("/") == "":
            raise LakeError(
                f"LOCATION '{location}' is not an absolute directory",
                "use file:///absolute/path/ (not the filesystem root)",
            )
        return scheme, "", "/" + posixpath.normpath(path).strip("/") + "/"
    if scheme in ("s3", "s3a", "oss", "cos"):
        prefix = parsed.path.strip("/")
        if not parsed.netloc:
            raise LakeError(f"LOCATION '{location}' names no bucket", "use s3://bucket/prefix/")
        if not prefix:
            raise LakeError(
                f"LOCATION '{location}' is a bucket root",
                "point the volume at a subdirectory, e.g. s3://bucket/data/",
            )
        if not _BUCKET.fullmatch(parsed.netloc) or ".." in prefix.split("/"):
            raise LakeError(
                f"LOCATION '{location}' has a bucket name or a '..' no bucket has",
                "use s3://bucket/prefix/ with the bucket's name and a prefix without '..'",
            )
        return scheme, parsed.netloc, prefix + "/"
    raise LakeError(
        f"LOCATION '{location}' has an unsupported scheme",
        "use file:///path/, s3://bucket/prefix/, oss://… or cos://…",
    )


def local_root(location: str, roots: tuple[Path, ...]) -> Path:
    """The directory of a LOCAL volume, resolved (links included), once it lies under one of
    the roots the operator allowed (LAKE_LOCAL_ROOTS)."""
    directory = Path(split_location(location)[2]).resolve()
    if any(directory == root or root in directory.parents for root in roots):
        return directory
    allowed = os.pathsep.join(map(str, roots))
    raise LakeError(
        f"LOCATION '{location}' ({directory}) is outside the directories LOCAL volumes may use",
        f"put the volume under {allowed}, or have the operator add its directory to "
        "LAKE_LOCAL_ROOTS"
        if roots
        else "have the operator name the directories LOCAL volumes may use in LAKE_LOCAL_ROOTS",
    )
