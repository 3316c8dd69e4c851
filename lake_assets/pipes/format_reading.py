"""The format options Spark's reader has no option for, applied to a lenient read's rows: the
lines OPTIONS('skip_header') skips dropped, and the strings NULL_IF lists made NULL."""

from __future__ import annotations

from functools import reduce
from operator import or_

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lake_assets.core.delta import quote_name
from lake_assets.core.entries import Column
from lake_assets.core.names import hidden
from lake_assets.volumes.files import format_options
from lake_assets.volumes.grammar import VolumeSource

_LINE = hidden("line")
_TOKENS = hidden("tokens")
# The column types a string casts to (a value of one of them is compared to the listed strings).
_FROM_STRINGS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL", "DOUBLE", "FLOAT", "BOOLEAN",
                 "DATE", "TIMESTAMP", "BINARY")  # fmt: skip
# Reader options that do not apply to one record's text, parsed again with from_csv or from_json.
_READER_ONLY = {"encoding", "charset", "header", "multiline", "mode", "columnnameofcorruptrecord"}


def skipped(frame: DataFrame, lines: int, file: str, order: str) -> DataFrame:
    """Each file's records after its first `lines` (those of a file ordered by `order`)."""
    if not lines:
        return frame
    in_file = Window.partitionBy(file).orderBy(order)
    numbered = frame.withColumn(_LINE, F.row_number().over(in_file))
    return numbered.filter(F.col(_LINE) > lines).drop(_LINE)


def nulls_applied(
    frame: DataFrame,
    source: VolumeSource,
    columns: tuple[Column, ...],
    null_if: tuple[str, ...],
    corrupt: str,
) -> DataFrame:
    """The listed strings NULL in every column (`columns` as read). A record Spark marked bad
    (in `corrupt`) is parsed again as text: when each value that did not fit its column is a
    listed string, the record is good, its value NULL."""
    if not null_if:
        return frame
    strings = ", ".join(
        [*(f"{quote_name(c.name)} STRING" for c in columns), f"{quote_name(corrupt)} STRING"]
    )
    kept = format_options(source.file_format, source.options)
    options = {key: value for key, value in kept.items() if key not in _READER_ONLY}
    options |= {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": corrupt}
    parse = F.from_csv if source.file_format == "CSV" else F.from_json
    bad = F.col(corrupt).isNotNull()
    marked = frame.withColumn(_TOKENS, F.when(bad, parse(F.col(corrupt), strings, options)))
    tokens = F.col(_TOKENS)
    unlisted = [
        _value(c).isNull() & tokens[c.name].isNotNull() & ~tokens[c.name].isin(*null_if)
        for c in columns
        if c.type != "STRING"
    ]
    still_bad = reduce(or_, unlisted, tokens[corrupt].isNotNull())
    values = {c.name: F.when(~_listed(c, null_if), _value(c)) for c in columns}
    return marked.withColumns({**values, corrupt: F.when(still_bad, F.col(corrupt))}).drop(_TOKENS)


def _value(column: Column) -> SparkColumn:
    return F.col(quote_name(column.name))


def _listed(column: Column, null_if: tuple[str, ...]) -> SparkColumn:
    """Whether a value is listed: a string as written; a value of another type equal to a listed
    string that is a value of that type (NULL_IF = ('0') in an INT column: 0, written 0 or 00)."""
    if column.type == "STRING":
        return F.coalesce(_value(column).isin(*null_if), F.lit(False))
    if not column.type.startswith(_FROM_STRINGS):  # an ARRAY, MAP, STRUCT…: no string casts to it
        return F.lit(False)
    listed = [F.lit(text).try_cast(column.type) for text in null_if]
    return F.coalesce(_value(column).isin(*listed), F.lit(False))
