"""A range of a table's commits as per-column operation records (the changelog's six-tuple), as one
Spark SQL query over Delta's change data feed.

Within one commit, a key's row images pair up: no old image is an insert, no new image a delete,
both an update. An insert gives a U per non-null column; an update a U per column that changed
to a value and a DA per column that became NULL; a delete one DR. DO (one version of a column
deleted) has no counterpart in a single-version table and is never produced. Replaying the
records in sequence order onto the table's rows at the range's start (U sets a column, DA
clears it, DR removes the row) gives its rows at the range's end, but for rows whose non-key
columns are all NULL: they have no column versions, so no records."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from lake_assets.core.delta import quote_name, sql_string
from lake_assets.core.entries import Column

# The columns after the key's, in order; SEQUENCE_INFO only when the export asks for it.
COLUMN_NAME, VERSION, COLUMN_VALUE, OP_TYPE, SEQUENCE_INFO = (
    "column_name",
    "version",
    "column_value",
    "op_type",
    "sequence_info",
)
# The messages an export fails with when two rows of one commit share a key, or a changed row's
# key is NULL (see engine).
DUPLICATE_KEY = "lake: two rows of one commit share the primary key"
NULL_KEY = "lake: a changed row has a NULL primary key"
RECORD_NAMES = (COLUMN_NAME, VERSION, COLUMN_VALUE, OP_TYPE, SEQUENCE_INFO)
# Working columns: a change's side (0 old image, 1 new) and image, its commit and the commit's
# time, the images paired, and a record's parts (column name, position, op, value).
_SIDE, _IMAGE, _COMMIT, _MILLIS = "__lake_side", "__lake_image", "__lake_commit", "__lake_millis"
_BEFORE, _AFTER = "__lake_before", "__lake_after"
_NAME, _POSITION, _OP, _VALUE = "__lake_name", "__lake_position", "__lake_op", "__lake_value"
_COMPLEX = ("array<", "map<", "struct<")


class OpType(StrEnum):
    """What a record does to its row's column (the changelog's names; DO is never produced)."""

    UPDATE = "U"
    DELETE_ONE_VERSION = "DO"
    DELETE_ALL_VERSIONS = "DA"
    DELETE_ROW = "DR"


def record_columns(key: Sequence[Column], sequence_info: bool) -> list[Column]:
    """The records' schema: the key's columns under their own names, then the changelog's."""
    return [
        *(Column(column.name, column.type) for column in key),
        Column(COLUMN_NAME, "STRING"),
        Column(VERSION, "BIGINT"),
        Column(COLUMN_VALUE, "STRING"),
        Column(OP_TYPE, "STRING"),
        *([Column(SEQUENCE_INFO, "STRING")] if sequence_info else []),
    ]


def records_query(
    location: str,
    key: Sequence[Column],
    values: Sequence[Column],
    commits: Sequence[tuple[int, int]],
    sequence_info: bool,
) -> str:
    """The records of `commits` ((version, commit time in ms), ascending, all with change
    data), read from the change data feed between the first and the last of them."""
    first, last = commits[0][0], commits[-1][0]
    keys = ", ".join(quote_name(column.name) for column in key)
    not_null = " AND ".join(f"{quote_name(column.name)} IS NOT NULL" for column in key)
    times = ", ".join(f"({version}, {millis})" for version, millis in commits)
    fields = [f"{sql_string(column.name)}, {quote_name(column.name)}" for column in values]
    image = "named_struct(" + ", ".join(fields or ["'__lake', 1"]) + ")"
    changes = (
        f"SELECT {keys}, {image} AS {_IMAGE}, c._commit_version AS {_COMMIT}, "
        f"IF(_change_type IN ('delete', 'update_preimage'), 0, 1) AS {_SIDE} "
        f"FROM table_changes_by_path({sql_string(location)}, {int(first)}, {int(last)}) AS c "
        f"WHERE assert_true({not_null}, {sql_string(NULL_KEY)}) IS NULL"
    )
    paired = (
        f"SELECT {keys}, {_COMMIT}, "
        f"first(IF({_SIDE} = 0, {_IMAGE}, NULL), true) AS {_BEFORE}, "
        f"first(IF({_SIDE} = 1, {_IMAGE}, NULL), true) AS {_AFTER} "
        f"FROM ({changes}) GROUP BY {keys}, {_COMMIT} "
        f"HAVING assert_true(count_if({_SIDE} = 0) <= 1 AND count_if({_SIDE} = 1) <= 1, "
        f"{sql_string(DUPLICATE_KEY)}) IS NULL"
    )
    row_deleted = (
        f"array(named_struct('n', CAST(NULL AS STRING), 'p', 0, 'o', "
        f"{sql_string(OpType.DELETE_ROW)}, 'v', CAST(NULL AS STRING)))"
    )
    per_column = (
        "array("
        + ", ".join(_column_record(column, position) for position, column in enumerate(values, 1))
        + ")"
        if values
        else "CAST(array() AS ARRAY<STRUCT<n: STRING, p: INT, o: STRING, v: STRING>>)"
    )
    parts = ", ".join((_NAME, _POSITION, _OP, _VALUE))
    # A column a change leaves be has a record whose op is NULL, dropped here: an array filter
    # would be interpreted row by row (higher-order functions have no generated code).
    exploded = (
        f"SELECT /*+ BROADCAST(t) */ {keys}, g.{_COMMIT}, t.{_MILLIS}, {parts} "
        f"FROM ({paired}) AS g "
        f"JOIN (VALUES {times}) AS t({_COMMIT}, {_MILLIS}) ON g.{_COMMIT} = t.{_COMMIT} "
        f"LATERAL VIEW inline(IF({_AFTER} IS NULL, {row_deleted}, {per_column})) AS {parts} "
        f"WHERE {_OP} IS NOT NULL"
    )
    sequence = ""
    if sequence_info:
        order = ", ".join([*(quote_name(c.name) for c in key), _POSITION])
        position = f"row_number() OVER (PARTITION BY {_COMMIT} ORDER BY {order})"
        sequence = (
            f", concat(lpad(CAST({_COMMIT} AS STRING), 20, '0'), ':', "
            f"lpad(CAST({position} AS STRING), 10, '0')) AS {SEQUENCE_INFO}"
        )
    return (
        f"SELECT {keys}, {_NAME} AS {COLUMN_NAME}, {_MILLIS} AS {VERSION}, "
        f"{_VALUE} AS {COLUMN_VALUE}, {_OP} AS {OP_TYPE}{sequence} FROM ({exploded})"
    )


def _column_record(column: Column, position: int) -> str:
    """The column's record in a change, or one whose op is NULL when the change leaves it be."""
    after, before = (f"{side}.{quote_name(column.name)}" for side in (_AFTER, _BEFORE))
    same = f"{_comparable(after, column)} <=> {_comparable(before, column)}"
    op = (
        f"CASE WHEN {_BEFORE} IS NOT NULL AND {same} THEN NULL "
        f"WHEN {after} IS NOT NULL THEN {sql_string(OpType.UPDATE)} "
        f"WHEN {_BEFORE} IS NOT NULL THEN {sql_string(OpType.DELETE_ALL_VERSIONS)} END"
    )
    return (
        f"named_struct('n', {sql_string(column.name)}, 'p', {position}, 'o', {op}, "
        f"'v', {_text(after, column)})"
    )


def _comparable(value: str, column: Column) -> str:
    """Maps cannot be compared in Spark: their JSON can."""
    return f"to_json({value})" if "map<" in column.type.lower() else value


def _text(value: str, column: Column) -> str:
    """A value as the records' STRING: BINARY as base64, nested types as JSON."""
    kind = column.type.lower()
    if kind == "binary":
        return f"base64({value})"
    if kind.startswith(_COMPLEX):
        return f"to_json({value})"
    return f"CAST({value} AS STRING)"
