"""A real Postgres for tests: Debian's server binaries, a cluster of its own in a temporary
directory, listening on a free loopback port; each test that needs a clean database creates one."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.server_ports import failed_to_start, log_size, on_a_free_port

SUPERUSER = "lake"
DATABASE = "lake"
# Postgres refuses to run as root; as root, the server runs as this user (Debian's package's).
SERVER_USER = "postgres"
INITDB_OPTIONS = ("--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8")


def postgres_bin() -> Path:
    """The newest Debian Postgres's binaries (`apt-get install postgresql` puts them there)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
    )
    if not found:
        raise RuntimeError(
            "no Postgres server binaries under /usr/lib/postgresql: apt-get install postgresql"
        )
    return found[-1].parent


def _as_server_user(directory: Path) -> list[str]:
    """The command prefix that runs the server's binaries as a non-root user, owning `directory`."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", SERVER_USER], check=True)
    shutil.chown(directory, SERVER_USER, SERVER_USER)
    return ["runuser", "-u", SERVER_USER, "--"]


def _answers(sockets: Path, port: int) -> bool:
    """Our server answers: asked through its own unix socket folder, never another session's
    Postgres that took the TCP port (it exits when it cannot bind that port)."""
    try:
        with psycopg.connect(
            host=str(sockets), port=port, user=SUPERUSER, dbname="postgres", connect_timeout=1
        ):
            return True
    except psycopg.OperationalError:
        return False


def _start(
    run_as: list[str], binaries: Path, directory: Path, timeout: float, port: int
) -> tuple[subprocess.Popen, int]:
    """The server of the cluster in `directory` on `port`, once it answers."""
    deadline = time.monotonic() + timeout
    settings = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": str(directory),
        "max_connections": "300",
        # A test cluster, deleted afterwards: no need to survive a power cut.
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
    }
    options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
    log_path = directory / "server.log"
    since = log_size(log_path)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [*run_as, str(binaries / "postgres"), "-D", str(directory / "data"), *options],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    while not _answers(directory, port):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(run_as, binaries, directory, process)
            raise failed_to_start(log_path, since, f"Postgres on 127.0.0.1:{port}", port)
        time.sleep(0.1)
    return process, port


def _stop(run_as: list[str], binaries: Path, directory: Path, process: subprocess.Popen) -> None:
    """Fast shutdown: ends open sessions (pooled connections of the tests) and stops."""
    subprocess.run(
        [*run_as, str(binaries / "pg_ctl"), "stop", "-D", str(directory / "data"), "-m", "fast"],
        capture_output=True,
    )
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def url_of(port: int, database: str) -> str:
    """The SQLAlchemy URL of a database on the test server."""
    return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{port}/{database}"


@contextmanager
def postgres_server(timeout: float = 60.0) -> Iterator[str]:
    """initdb a cluster, start its server on a free loopback port (trust authentication, socket in
    the cluster's directory); yield the URL of its database `lake`; stop it and delete it all."""
    binaries = postgres_bin()
    # Short (unix socket paths are) and reachable by the server's user, unlike pytest's 0700 tree.
    directory = Path(tempfile.mkdtemp(prefix="lake-pg-"))
    data = directory / "data"
    try:
        run_as = _as_server_user(directory)
        initdb = subprocess.run(
            [*run_as, str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, *INITDB_OPTIONS],
            capture_output=True,
            text=True,
        )
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{initdb.stdout}{initdb.stderr}")
        process, port = on_a_free_port(partial(_start, run_as, binaries, directory, timeout))
        try:
            # The server's default database is `postgres`; the tests' is created here.
            with psycopg.connect(
                host=str(directory), port=port, user=SUPERUSER, dbname="postgres", autocommit=True
            ) as conn:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
            yield url_of(port, DATABASE)
        finally:
            _stop(run_as, binaries, directory, process)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def postgres_url_fixture(scope: str = "session") -> Callable[..., Iterator[str]]:
    """A pytest fixture yielding the URL of a Postgres server that lives for `scope`."""

    @pytest.fixture(scope=scope)
    def postgres_url() -> Iterator[str]:
        with postgres_server() as url:
            yield url

    return postgres_url


def new_database(url: str, icu_locale: str | None = None) -> str:
    """A fresh, empty database on the server at `url`; its URL. `icu_locale` (`en-US`): the
    database's default collation is that locale's, not the server's byte order."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    server = make_url(url)
    collation = (
        f" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}'" if icu_locale else ""
    )
    with psycopg.connect(
        host=server.host, port=server.port, user=server.username, dbname="postgres", autocommit=True
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{collation}')
    return server.set(database=name).render_as_string(hide_password=False)
