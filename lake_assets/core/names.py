"""Names the lakehouse gives to what users never see (hidden columns, temporary views,
placeholders) all start with one prefix, which user column names may not start with."""

from __future__ import annotations

import keyword
import re

from lake_assets.core.errors import LakeError

HIDDEN_PREFIX = "__lake_"
# Every object name of every kind: an ASCII letter or '_', then letters, digits and '_'. It is a
# valid Dagster name (asset key, sensor, job), and a table's warehouse folder `<name>-<12 hex>`
# fits the 255 bytes of a file name with room for the names Dagster derives from it.
MAX_NAME_LENGTH = 128
_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{MAX_NAME_LENGTH - 1}}}")
# Names Dagster refuses for ops, assets and sensors (its reserved words and Python's).
DAGSTER_RESERVED = frozenset(
    {
        "context",
        "conf",
        "config",
        "meta",
        "arg_dict",
        "dict",
        "input_arg_dict",
        "output_arg_dict",
        "int",
        "str",
        "float",
        "bool",
        "input",
        "output",
        "type",
        *keyword.kwlist,
    }
)


def hidden(name: str) -> str:
    """The hidden name for `name`."""
    return HIDDEN_PREFIX + name


def checked_name(name: str, what: str) -> str:
    """`name` lower-cased, once it is a valid object name: names become warehouse folders,
    Dagster asset keys and sensors, so a name that is not one is refused, however quoted."""
    lowered = name.lower()
    if not _NAME.fullmatch(name):
        raise LakeError(
            f"'{name}' cannot be {what}",
            f"start it with a letter or '_', then use only letters, digits and '_' "
            f"(at most {MAX_NAME_LENGTH} characters)",
        )
    if lowered.startswith(HIDDEN_PREFIX):
        raise LakeError(
            f"'{name}' cannot be {what}: names starting with {HIDDEN_PREFIX} are the "
            "lakehouse's own",
            f"pick a name that does not start with {HIDDEN_PREFIX}",
        )
    if lowered in DAGSTER_RESERVED:
        raise LakeError(f"'{name}' cannot be {what}: Dagster reserves it", "pick another name")
    return lowered


def refuse_repeated_columns(what: str, columns: list[str]) -> None:
    """A query's result read by name (a dynamic table's, a view's) cannot repeat a column name:
    its readers could not tell the two apart."""
    lowered = [column.lower() for column in columns]
    twice = sorted({column for column in lowered if lowered.count(column) > 1})
    if twice:
        raise LakeError(
            f"column {twice[0]} appears twice in the result of {what}",
            "give the columns distinct aliases",
        )
