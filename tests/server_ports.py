"""What the test servers share: each listens on a port picked free a moment before it binds it,
when another process (another test session's server, say) may take it. A server that could not
bind starts again on another port, and one counts as up only once it is the one listening."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

import psutil

from resources.spark_server import free_port, listening

PORT_ATTEMPTS = 5
# What a server here says when its port is taken: Linux's "Address already in use" (moto,
# Postgres, the JVMs), or `lake spark-server`'s own check ("port … is already in use").
PORT_TAKEN = "already in use"
Started = TypeVar("Started")


class PortTaken(Exception):
    """A server could not bind the port picked for it: another process took it meanwhile."""


def on_a_free_port(start: Callable[[int], Started]) -> Started:
    """`start(port)` on a free port; when it raises PortTaken, again on another one."""
    for _ in range(PORT_ATTEMPTS - 1):
        with suppress(PortTaken):
            return start(free_port())
    return start(free_port())


def listens(process: subprocess.Popen, port: int) -> bool:
    """`process`, or a process it started, listens on `port`: the server there is ours."""
    try:
        parent = psutil.Process(process.pid)
        family = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    for member in family:
        try:
            sockets = member.net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        if any(s.status == psutil.CONN_LISTEN and s.laddr.port == port for s in sockets):
            return True
    return False


def log_size(log: Path) -> int:
    """Where a new try's output starts in `log` (servers append to it)."""
    return log.stat().st_size if log.exists() else 0


def failed_to_start(log: Path, since: int, what: str, port: int) -> Exception:
    """Why a server (stopped now) did not start on `port`: PortTaken when its output after
    `since` says so or another process listens there, else an error with that output."""
    with log.open("rb") as output:
        output.seek(since)
        said = output.read().decode(errors="replace")
    if PORT_TAKEN in said or listening(port):
        return PortTaken(f"{what}: port {port} is taken")
    return RuntimeError(f"{what} did not start:\n{said}")
