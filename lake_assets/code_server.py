"""`lake code-server`: serves the code location, and serves it anew whenever the catalog's objects
change, so that the daemon and the UI follow `lake sql` without a reload.

Each generation of the code location is a `dagster api grpc` server on a unix socket of its own.
The workspace file names the stable symlink `code.sock`; once a new generation answers health
checks, the symlink is repointed to it atomically and the old generation gets SIGTERM: it stops
taking calls and exits once its runs (its child processes) have finished. The daemon and the
webserver watch the server's id through the symlink and reload the location by themselves."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, NoReturn

from sqlalchemy.exc import SQLAlchemyError

import lake_assets.kinds  # noqa: F401  (each kind's entry registers itself in CatalogObject.KINDS)
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from resources.spark_server import cleaning_up, die_with_parent, stop

MODULE = "lake_assets.definitions"
LOCATION = "lake"
LINK = "code.sock"
POLL_SECONDS = 0.5
# A script's statements land one by one: serve their definitions once the catalog is quiet.
SETTLE_SECONDS = 1.0
START_TIMEOUT_SECONDS = 300
STOP_GRACE_SECONDS = 30
WORKSPACE = """\
# Written by `lake code-server` while it runs: the code location it serves, through a symlink
# that always names its newest server.
load_from:
  - grpc_server:
      socket: {socket}
      location_name: {location}
"""
_DAGSTER = Path(sys.executable).with_name("dagster")


def catalog_fingerprint(catalog: Catalog) -> str:
    """A digest of every object's definition; not of table versions, stream offsets, task runs or
    load and refresh history, which change with every commit but not the Dagster definitions."""
    digest = hashlib.sha256()
    for kind_name, kind in sorted(CatalogObject.KINDS.items()):
        for entry in catalog.entries(kind):
            spec = entry.to_spec(declared_only=True)
            line = f"{kind_name}\0{entry.name}\0{entry.created_at}\0{spec}\n"
            digest.update(line.encode())
    return digest.hexdigest()


def workspace_file(env: Mapping[str, str]) -> Path:
    """`$DAGSTER_HOME/workspace.yaml`: runtime state, next to the instance that uses it."""
    home = env.get("DAGSTER_HOME")
    if not home:
        raise LakeError(
            "DAGSTER_HOME is not set, so there is no place for the workspace file",
            "set DAGSTER_HOME (the Makefile uses dagster_home/) or pass --workspace FILE",
        )
    return Path(home) / "workspace.yaml"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} lake code-server: {message}", flush=True)


def _last_line(log: Path, offset: int) -> str:
    """The last line a failed server wrote: its error (the traceback stays in the log)."""
    with log.open("rb") as text:
        text.seek(offset)
        lines = [line.strip() for line in text.read().decode(errors="replace").splitlines()]
    return next((line for line in reversed(lines) if line), "no output")


def _server_setup() -> None:
    """In the server's process before it starts: SIGTERM retires it even if this supervisor was
    started with SIGINT ignored (`&` in a script; Dagster maps SIGTERM to SIGINT's handler), and
    no server outlives a killed supervisor."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    die_with_parent()


def _answers(socket: Path) -> bool:
    checked = subprocess.run(
        [str(_DAGSTER), "api", "grpc-health-check", "--socket", str(socket)],
        capture_output=True,
        check=False,
    )
    return checked.returncode == 0


@dataclass
class Server:
    """One generation of the code location."""

    generation: int
    socket: Path
    process: subprocess.Popen


class CodeServers:
    """The generations of the code location's server and the symlink that names the live one."""

    def __init__(self, directory: Path, log: Path) -> None:
        self.directory = directory
        self.link = directory / LINK
        self.log = log
        self.live: Server | None = None
        self.retiring: list[Server] = []
        self.generation = 0

    def serve_anew(self) -> Server:
        """Start the next generation; once it answers, point the link at it and retire the live
        one. A generation that fails to load raises LakeError, and the live one keeps serving."""
        self.generation += 1
        socket = self.directory / f"code-{self.generation}.sock"
        offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as output:
            process = subprocess.Popen(
                [str(_DAGSTER), "api", "grpc", "--module-name", MODULE, "--socket", str(socket),
                 "--location-name", LOCATION],
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                preexec_fn=_server_setup,
            )  # fmt: skip
        server = Server(self.generation, socket, process)
        try:
            self._wait_until_answering(server, offset)
        except BaseException:  # it failed, or this supervisor is stopping meanwhile
            stop(process)
            socket.unlink(missing_ok=True)
            raise
        temporary = self.directory / f".{LINK}-{server.generation}"
        os.symlink(socket.name, temporary)
        os.replace(temporary, self.link)
        if self.live is not None:
            self.live.process.terminate()
            self.retiring.append(self.live)
        self.live = server
        return server

    def _wait_until_answering(self, server: Server, offset: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not (server.socket.exists() and _answers(server.socket)):
            status = server.process.poll()
            if status is not None or time.monotonic() > deadline:
                what = f"exited with status {status}" if status is not None else "did not answer"
                raise LakeError(
                    f"generation {server.generation} of the definitions {what}: "
                    f"{_last_line(self.log, offset)}",
                    f"see {self.log}",
                )
            time.sleep(POLL_SECONDS)

    def reap(self) -> bool:
        """Forget retired generations whose runs have finished, and their sockets; True when the
        live generation exited by itself (it is forgotten too, so that it is replaced once)."""
        for server in self.retiring:
            if server.process.poll() is not None:
                server.socket.unlink(missing_ok=True)
        self.retiring = [server for server in self.retiring if server.process.poll() is None]
        if self.live is None or self.live.process.poll() is None:
            return False
        status = self.live.process.returncode
        _say(f"generation {self.live.generation} exited by itself (status {status})")
        self.live = None
        return True

    def stop_all(self) -> None:
        """SIGTERM every generation; together they get one grace period to finish their runs."""
        servers = [*self.retiring, *([self.live] if self.live else [])]
        for server in servers:
            server.process.terminate()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for server in servers:
            stop(server.process, max(0.0, deadline - time.monotonic()))


def _settled(catalog: Catalog, seen: str) -> str:
    """The fingerprint once it has stopped changing for SETTLE_SECONDS (or `seen` if unchanged)."""
    current = catalog_fingerprint(catalog)
    while current != seen:
        seen = current
        time.sleep(SETTLE_SECONDS)
        current = catalog_fingerprint(catalog)
    return current


def _follow(catalog: Catalog, servers: CodeServers, served: str) -> NoReturn:
    """Poll the catalog; serve a new generation when its objects change or the live one died."""
    while True:
        time.sleep(POLL_SECONDS)
        lost = servers.reap()
        try:
            current = _settled(catalog, served)
        except SQLAlchemyError as error:
            _say(f"cannot read the catalog, trying again: {error}")
            continue
        if current == served and not lost:
            continue
        served = current
        try:
            server = servers.serve_anew()
        except LakeError as error:
            live = f"generation {servers.live.generation}" if servers.live else "nothing"
            _say(f"{error}; still serving {live}")
        else:
            _say(f"serving generation {server.generation} of the catalog's definitions")


def serve(settings: LakeSettings, workspace: Path) -> int:
    """Run in the foreground until SIGINT/SIGTERM, then stop every generation."""
    directory = Path(tempfile.mkdtemp(prefix="lake-code-"))  # socket paths must stay short
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    servers = CodeServers(directory, settings.log_dir / "code-server.log")
    signal.signal(signal.SIGTERM, _interrupt)
    catalog = Catalog(settings.catalog_location)
    try:
        served = catalog_fingerprint(catalog)
        server = servers.serve_anew()
        temporary = workspace.with_name(f".{workspace.name}.tmp")
        temporary.write_text(WORKSPACE.format(socket=servers.link, location=LOCATION))
        temporary.replace(workspace)
        _say(
            f"serving generation {server.generation} of {MODULE} on {servers.link}; "
            f"point Dagster at {workspace} (dagster dev -w / dagster-daemon run -w)"
        )
        _follow(catalog, servers, served)
    except KeyboardInterrupt:
        return 0
    finally:
        cleaning_up()
        servers.stop_all()
        if workspace.exists() and str(servers.link) in workspace.read_text():
            workspace.unlink()
        shutil.rmtree(directory, ignore_errors=True)


def spawn_code_server(
    env: dict[str, str], output: IO | None = None
) -> tuple[subprocess.Popen, Path]:
    """Start `lake code-server` as a child process; return it and its workspace file once the
    first generation serves."""
    workspace = workspace_file(env)
    workspace.unlink(missing_ok=True)  # a file left by a killed server names a dead socket
    process = subprocess.Popen(
        [sys.executable, "-m", "lake_assets.cli", "code-server", "--workspace", str(workspace)],
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        env=env,
    )
    while not workspace.exists():
        if process.poll() is not None:
            raise LakeError(
                f"the code server exited (status {process.returncode}) before it served the "
                "definitions",
                f"see {getattr(output, 'name', 'its output')} and $LAKE_HOME/logs/code-server.log",
            )
        time.sleep(0.2)
    return process, workspace
