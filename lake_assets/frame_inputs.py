"""The Python API's arguments checked and put in the lake's terms, for Session and its writer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyspark.sql.types import DataType

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.sql.tokens import TokenCursor, tokenize
from lake_assets.sql.types import SUPPORTED, parse_column_type
from lake_assets.streams.reading import StreamRead

# Settings of `Session.builder.configs`: ours, then schema and vcluster, kept for compatibility.
SETTINGS = ("lake_home", "spark_master", "spark_remote", "spark_conf", "schema", "vcluster")
SCHEMA = "public"
SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")
_MODE_ALIASES = {"error": "errorifexists", "default": "errorifexists"}


def check_setting(key: str, value: Any) -> None:
    """Refuse a setting the builder does not know, or a schema other than the only one."""
    if key not in SETTINGS:
        raise LakeError(f"unknown session setting '{key}'", f"use only: {', '.join(SETTINGS)}")
    if key == "schema" and value is not None and str(value).lower() != SCHEMA:
        raise LakeError(
            f"schema '{value}' does not exist: every object lives in the one schema '{SCHEMA}'",
            f"leave schema out or set it to '{SCHEMA}'",
        )
    if key == "spark_conf" and value is not None and not isinstance(value, Mapping):
        raise LakeError(
            f"spark_conf must be a dict of Spark settings, not {type(value).__name__}",
            "pass e.g. {'spark.driver.memory': '4g'}",
        )


def session_settings(options: Mapping[str, Any]) -> LakeSettings:
    """The settings `lake sql` reads from the environment, with the builder's `options` winning
    (spark_conf entries are added to LAKE_SPARK_CONF's; spark_remote=None means a local JVM)."""
    for key, value in options.items():
        check_setting(key, value)
    settings = LakeSettings.from_env()
    changes: dict[str, Any] = {}
    if options.get("lake_home") is not None:
        changes["lake_home"] = Path(options["lake_home"])
    if options.get("spark_master") is not None:
        changes["spark_master"] = str(options["spark_master"])
    if "spark_remote" in options:
        changes["spark_remote"] = options["spark_remote"] or None
    if options.get("spark_conf"):
        conf = {str(key): str(value) for key, value in options["spark_conf"].items()}
        changes["spark_conf"] = {**settings.spark_conf, **conf}
    return replace(settings, **changes)


def consumable(reads: Iterable[StreamRead]) -> tuple[StreamRead, ...]:
    """One range per stream: a frame that read a stream twice, at different versions, cannot
    say where the offset should move to."""
    by_stream: dict[str, StreamRead] = {}
    for read in reads:
        first = by_stream.setdefault(read.stream, read)
        if first != read:
            raise LakeError(
                f"this frame reads stream {read.stream} twice, up to versions {first.end} and "
                f"{read.end}",
                f"read it once with session.table('{read.stream}') and use that frame throughout",
            )
    return tuple(by_stream.values())


def object_name(name: str) -> str:
    """A catalog name as SQL spells it: case-insensitive, and bare (one schema)."""
    cursor = TokenCursor(tokenize(name), usage="a bare name, such as orders")
    found = cursor.name("a table name")
    cursor.expect_end()
    return found


def checked_save_mode(mode: str) -> str:
    found = _MODE_ALIASES.get(mode.lower(), mode.lower())
    if found not in SAVE_MODES:
        raise LakeError(f"unknown save mode '{mode}'", f"use one of: {', '.join(SAVE_MODES)}")
    return found


def column_type(name: str, data_type: DataType) -> str:
    """A frame column's type as CREATE TABLE spells it, through CREATE TABLE's type parser."""
    text = data_type.simpleString()
    cursor = TokenCursor(tokenize(text))
    try:
        spelled: str | None = parse_column_type(cursor, name)
    except LakeError:
        spelled = None
    if spelled is None or not cursor.at_end():
        raise LakeError(
            f"column {name} has the type {text}, which a table cannot hold",
            f"cast it to one of {SUPPORTED}",
        )
    return spelled
