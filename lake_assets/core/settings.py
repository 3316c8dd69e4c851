"""Where the lakehouse lives and how Spark runs, read once from the environment."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lake_assets.core.errors import LakeError

DEFAULT_SPARK_MASTER = "local[2]"
# Under the lake home while a `lake spark-server` serves it: {"remote": "sc://…", "pid": …}.
SPARK_SERVER_FILE = "spark-server.json"
# A master that runs Spark inside the driver: `local`, `local[N]`, `local[*]`, `local[N, F]`.
LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?")
# Partition keys (source versions) each stream keeps in Dagster, which advises at most 100k
# partitions per asset; beyond it the oldest consumed keys go first.
DEFAULT_STREAM_PARTITIONS = 10_000
# Environment variables an `env:` reference may always name; LAKE_ENV_REFERENCES adds others.
ENV_REFERENCE_PREFIX = "LAKE_CONN_"
# The key that decrypts every stored secret: no reference may name it, whatever the settings.
SECRET_KEY_VARIABLE = "LAKE_SECRET_KEY"
# Seconds a catalog writer waits for another process's write lock before it fails
# (LAKE_CATALOG_LOCK_WAIT).
DEFAULT_CATALOG_LOCK_WAIT = 30.0
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _default_lake_home() -> Path:
    dagster_home = os.environ.get("DAGSTER_HOME")
    base = Path(dagster_home) if dagster_home else Path.cwd() / "dagster_home"
    return base / "lake"


def announced_server(lake_home: Path) -> str | None:
    """The URL of a warm Spark Connect server serving this lake home (`lake spark-server`, which
    `make dev` starts, writes SPARK_SERVER_FILE while it listens), if its process still runs."""
    try:
        announced = json.loads((lake_home / SPARK_SERVER_FILE).read_text())
        os.kill(int(announced["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(announced["remote"])


def _default_jars_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "lake-assets" / "jars"


def _parse_spark_conf(text: str) -> dict[str, str]:
    """Parse `key=value` pairs separated by commas or newlines (LAKE_SPARK_CONF)."""
    conf: dict[str, str] = {}
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"LAKE_SPARK_CONF entry {item!r} is not key=value")
        conf[key.strip()] = value.strip()
    return conf


def env_references(env: Mapping[str, str]) -> tuple[str, ...]:
    """The names (`NAME`) and prefixes (`PREFIX*`) of the variables an `env:` reference may
    name: LAKE_CONN_* and LAKE_ENV_REFERENCES (comma-separated), read from the environment of
    the process that uses the reference, so that SQL cannot widen them."""
    allowed = [ENV_REFERENCE_PREFIX + "*"]
    for item in env.get("LAKE_ENV_REFERENCES", "").split(","):
        item = item.strip()
        if not item:
            continue
        if not _VARIABLE.fullmatch(item.removesuffix("*")):
            raise LakeError(
                f"LAKE_ENV_REFERENCES entry '{item}' is not a variable name or a PREFIX*",
                "list names such as MY_KEY or prefixes such as MY_* (a bare * would allow "
                "every variable of the process)",
            )
        allowed.append(item)
    return tuple(allowed)


def env_reference_allowed(variable: str, allowed: tuple[str, ...]) -> bool:
    """Whether `variable` is one the operator allowed; LAKE_SECRET_KEY never is."""
    if variable == SECRET_KEY_VARIABLE or not _VARIABLE.fullmatch(variable):
        return False
    return any(
        variable.startswith(item[:-1]) if item.endswith("*") else variable == item
        for item in allowed
    )


def local_roots(env: Mapping[str, str], lake_home: Path) -> tuple[Path, ...]:
    """Directories a LOCAL volume may lie under: LAKE_LOCAL_ROOTS (os.pathsep-separated), else,
    with the embedded catalog (one user's laptop), LAKE_HOME, DAGSTER_HOME, the user's home and
    the system temp directory; with a shared catalog (LAKE_CATALOG_URL) none until the operator
    names them. Each is resolved, links included."""
    configured = env.get("LAKE_LOCAL_ROOTS", "")
    if configured.strip():
        roots = [Path(item) for item in configured.split(os.pathsep) if item.strip()]
        relative = [str(root) for root in roots if not root.is_absolute()]
        if relative:
            raise LakeError(
                f"LAKE_LOCAL_ROOTS entry '{relative[0]}' is not an absolute path",
                f"list absolute directories separated by '{os.pathsep}'",
            )
    elif env.get("LAKE_CATALOG_URL"):
        roots = []
    else:
        roots = [lake_home, Path.home(), Path(tempfile.gettempdir())]
        if env.get("DAGSTER_HOME"):
            roots.append(Path(env["DAGSTER_HOME"]))
    return tuple(root.resolve() for root in roots)


def endpoints(env: Mapping[str, str]) -> tuple[str, ...] | None:
    """LAKE_ENDPOINTS: the hosts (`host` or `host:port`, comma-separated) a connection's
    ENDPOINT may name, or None (unset) for any."""
    configured = env.get("LAKE_ENDPOINTS", "")
    if not configured.strip():
        return None
    return tuple(item.strip().lower() for item in configured.split(",") if item.strip())


def catalog_lock_wait(env: Mapping[str, str]) -> float:
    """LAKE_CATALOG_LOCK_WAIT: how long a writer waits for another process's turn on the catalog,
    so that a process that keeps the catalog's write lock fails the others in bounded time."""
    text = env.get("LAKE_CATALOG_LOCK_WAIT", "").strip()
    if not text:
        return DEFAULT_CATALOG_LOCK_WAIT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise LakeError(
            f"LAKE_CATALOG_LOCK_WAIT '{text}' is not a number of seconds",
            f"set it to a number of seconds such as 5, or unset it for "
            f"{DEFAULT_CATALOG_LOCK_WAIT:g}",
        )
    return seconds


@dataclass(frozen=True)
class LakeSettings:
    """Configuration shared by the CLI, the Dagster code location and the tests."""

    lake_home: Path
    spark_master: str = DEFAULT_SPARK_MASTER
    jars_dir: Path = field(default_factory=_default_jars_dir)
    spark_conf: dict[str, str] = field(default_factory=dict)
    load_history_days: float = 7.0
    spark_remote: str | None = None
    stream_partitions: int = DEFAULT_STREAM_PARTITIONS
    catalog_url: str | None = None
    warehouse_url: str | None = None

    def __post_init__(self) -> None:
        # A relative lake home means the working directory's: Spark, the catalog and every
        # process a run starts must see the same absolute path.
        object.__setattr__(self, "lake_home", Path(os.path.abspath(self.lake_home.expanduser())))

    @property
    def local_spark(self) -> bool:
        """Whether Spark runs inside the driver, on this machine, rather than on a cluster."""
        return LOCAL_MASTER.fullmatch(self.spark_master.strip()) is not None

    @property
    def catalog_path(self) -> Path:
        return self.lake_home / "catalog.db"

    @property
    def catalog_location(self) -> str:
        """LAKE_CATALOG_URL (a shared Postgres), or the embedded SQLite file under LAKE_HOME."""
        return self.catalog_url or str(self.catalog_path)

    @property
    def warehouse_location(self) -> str:
        """LAKE_WAREHOUSE (`s3a://bucket/prefix`, no trailing slash), or the local warehouse."""
        return self.warehouse_url.rstrip("/") if self.warehouse_url else str(self.warehouse)

    @property
    def warehouse(self) -> Path:
        return self.lake_home / "warehouse"

    @property
    def log_dir(self) -> Path:
        return self.lake_home / "logs"

    @classmethod
    def from_env(cls) -> LakeSettings:
        """Read the LAKE_* variables (see docs/configuration.md)."""
        env = os.environ
        lake_home = Path(env["LAKE_HOME"]) if env.get("LAKE_HOME") else _default_lake_home()
        # Unset, a warm server of this lake home is used by itself; set empty, a local JVM.
        remote = (
            env.get("LAKE_SPARK_REMOTE") or None
            if "LAKE_SPARK_REMOTE" in env
            else announced_server(lake_home.expanduser().absolute())
        )
        return cls(
            lake_home=lake_home,
            spark_master=env.get("LAKE_SPARK_MASTER") or DEFAULT_SPARK_MASTER,
            jars_dir=Path(env["LAKE_JARS_DIR"])
            if env.get("LAKE_JARS_DIR")
            else _default_jars_dir(),
            spark_conf=_parse_spark_conf(env.get("LAKE_SPARK_CONF", "")),
            load_history_days=float(env.get("LAKE_LOAD_HISTORY_DAYS") or 7),
            spark_remote=remote,
            stream_partitions=int(env.get("LAKE_STREAM_PARTITIONS") or DEFAULT_STREAM_PARTITIONS),
            catalog_url=env.get("LAKE_CATALOG_URL") or None,
            warehouse_url=env.get("LAKE_WAREHOUSE") or None,
        )
