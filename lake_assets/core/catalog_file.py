"""The embedded catalog's SQLite file when it is busy or damaged: which process holds its write
lock, and what SQLite's integrity check finds, so that either is one line that says what to do
instead of the driver's words and SQL."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from lake_assets.core.errors import LakeError
from lake_assets.core.rendering import visible
from lake_assets.core.settings import LakeSettings, catalog_lock_wait

# The byte of the `-shm` file that SQLite's one writer locks in WAL mode (its write-lock slot).
_WAL_WRITE_BYTE = 120
# SQLite's words for a file another connection holds, and for pages that do not read as a database.
_LOCKED = "database is locked"
_DAMAGED = ("database disk image is malformed", "file is not a database")
# How much of a process's command line a message shows.
_COMMAND_CHARS = 160


@dataclass(frozen=True)
class Holder:
    """A process that holds the catalog's write lock."""

    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.command}" if self.command else f"pid {self.pid}"


def write_lock_holders(path: Path) -> list[Holder]:
    """The processes Linux lists in /proc/locks as holding a write lock on the WAL's writer byte
    or on the file itself (none where there is no /proc/locks): only they keep a writer waiting,
    unlike the readers that also have the file open."""
    targets: dict[tuple[int, int, int], int | None] = {}
    for file, byte in ((Path(f"{path}-shm"), _WAL_WRITE_BYTE), (path, None)):
        try:
            stat = os.stat(file)
        except OSError:
            continue
        targets[(os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino)] = byte
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        # `1: POSIX  ADVISORY  WRITE 4880 fe:00:9977876 120 120`; a waiter's line has `->` too.
        fields = line.split()
        if len(fields) != 8 or fields[3] != "WRITE" or not fields[4].isdigit():
            continue
        major, minor, inode = fields[5].split(":")
        key = (int(major, 16), int(minor, 16), int(inode))
        if key not in targets:
            continue
        byte = targets[key]
        start, end = int(fields[6]), fields[7]
        covers = byte is None or (start <= byte and (end == "EOF" or byte <= int(end)))
        if covers and int(fields[4]) not in pids:
            pids.append(int(fields[4]))
    return [Holder(pid, _command_line(pid)) for pid in pids]


def _command_line(pid: int) -> str:
    """A process's command line as one printable line, cut short ('' if it cannot be read)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    text = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    shown = visible(text)
    return shown if len(shown) <= _COMMAND_CHARS else shown[: _COMMAND_CHARS - 1] + "…"


def locked(path: Path, wait: float) -> LakeError:
    """A busy catalog names the process to wait for or stop, where Linux says which it is."""
    holders = write_lock_holders(path)
    who = "; ".join(map(str, holders)) if holders else "which one is not known"
    return LakeError(
        f"the catalog {path} is busy: another process holds its write lock ({who}) and did "
        f"not release it within {wait:g} s",
        "wait for that process to finish, or stop it, and run again "
        "(LAKE_CATALOG_LOCK_WAIT sets how many seconds a writer waits)",
    )


def damaged(path: Path, reason: str) -> LakeError:
    """A damaged catalog is not repaired in place: the fix is a backup or a salvaged copy."""
    return LakeError(
        f"the catalog {path} is damaged ({reason})",
        "restore the file from a backup, or salvage what SQLite can still read into a new file "
        "with the sqlite3 shell's .recover (or .dump) and put that in its place (docs/catalog.md); "
        "`lake catalog check` lists the damage",
    )


def sqlite_trouble(error: BaseException, path: Path, wait: float) -> LakeError | None:
    """The one line for SQLite's error on a locked or damaged file; None for any other error."""
    text = str(error)
    if _LOCKED in text:
        return locked(path, wait)
    if any(words in text for words in _DAMAGED):
        return damaged(path, text)
    return None


def integrity_problems(settings: LakeSettings) -> list[str]:
    """SQLite's integrity check of the embedded catalog: the problems it lists (none: intact)."""
    if settings.catalog_url:
        raise LakeError(
            "the catalog is the database LAKE_CATALOG_URL names, not a SQLite file",
            "check that database with its server's own tools",
        )
    path = settings.catalog_path
    if not path.is_file():
        raise LakeError(f"there is no catalog at {path}", "check LAKE_HOME")
    wait = catalog_lock_wait(os.environ)
    problems: list[str] = []
    try:
        with closing(sqlite3.connect(path, timeout=wait)) as conn:
            # Row by row: the check may list some problems and then stop on a worse one.
            for (problem,) in conn.execute("PRAGMA integrity_check"):
                problems.append(str(problem))
    except sqlite3.DatabaseError as error:
        if _LOCKED in str(error):
            raise locked(path, wait) from None
        problems.append(str(error))
    return [] if problems == ["ok"] else problems
