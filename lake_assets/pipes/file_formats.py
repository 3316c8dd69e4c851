"""COPY's file-format options in Snowflake's spellings: SKIP_HEADER (OPTIONS('skip_header' = 'n')),
NULL_IF, DATE_FORMAT and TIMESTAMP_FORMAT (Snowflake's format tokens, translated to Spark's
datetime patterns) and ENCODING (Snowflake's names of character sets, mapped to Java's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from lake_assets.core.errors import LakeError
from lake_assets.volumes.grammar import VolumeSource

SKIP_HEADER = "skip_header"
# A Snowflake format token: its Spark datetime pattern, and Python's strptime directive (with
# which a rejected record's diagnosis checks a value). A token comes before those it begins with:
# HH24 before HH, YYYY before YY.
_TOKENS = {
    "TZH:TZM": ("XXX", "%z"),
    "TZHTZM": ("XX", "%z"),
    "HH24": ("HH", "%H"),
    "HH12": ("hh", "%I"),
    "YYYY": ("yyyy", "%Y"),
    **{f"FF{n}": ("S" * n, "%f") for n in range(1, 10)},
    "TZH": ("X", "%z"),
    "MON": ("MMM", "%b"),
    "FF": ("SSSSSSSSS", "%f"),
    "YY": ("yy", "%y"),
    "MM": ("MM", "%m"),
    "DD": ("dd", "%d"),
    "HH": ("hh", "%I"),
    "MI": ("mm", "%M"),
    "SS": ("ss", "%S"),
    "AM": ("a", "%p"),
    "PM": ("a", "%p"),
}
TOKENS_USAGE = "YYYY YY MM MON DD HH24 HH12 HH MI SS FF FF1…FF9 AM PM TZH:TZM TZHTZM TZH"
# Characters that stand for themselves in a format; other text goes in double quotes ("T").
_LITERALS = set(" -/:.,_;")
_WORD = re.compile(r"[A-Za-z0-9]+")
_LINES = re.compile(r"[0-9]+")
# Snowflake's ENCODING names, without dashes or underscores (UTF8 and UTF-8 alike), and the Java
# charset of each.
_ENCODINGS = {
    "UTF8": "UTF-8",
    "LATIN1": "ISO-8859-1",
    **{f"ISO8859{n}": f"ISO-8859-{n}" for n in range(1, 10)},
    **{f"WINDOWS{n}": f"windows-{n}" for n in range(1250, 1256)},
    **{f"UTF{bits}{end}": f"UTF-{bits}{end}" for bits in (16, 32) for end in ("", "BE", "LE")},
    "BIG5": "Big5",
    "EUCJP": "EUC-JP",
    "EUCKR": "EUC-KR",
    "GB18030": "GB18030",
    "KOI8R": "KOI8-R",
    "SHIFTJIS": "Shift_JIS",
}
ENCODINGS_USAGE = (
    "use UTF8, LATIN1, ISO-8859-1…9, WINDOWS-1250…1255, UTF-16/32[BE|LE], BIG5, EUC-JP, EUC-KR, "
    "GB18030, KOI8-R, SHIFT_JIS"
)


@dataclass(frozen=True)
class DatetimeFormat:
    """A DATE_FORMAT or TIMESTAMP_FORMAT as written, as Spark's pattern, and as Python's strptime
    format (with which a rejected record's diagnosis checks a value)."""

    text: str
    spark: str
    python: str


def datetime_format(option: str, text: str) -> DatetimeFormat | None:
    """The value after DATE_FORMAT = or TIMESTAMP_FORMAT =; None for AUTO (Snowflake's default),
    which leaves Spark's ISO forms."""
    if text.strip().upper() == "AUTO":
        return None
    if not text.strip():
        raise LakeError(f"{option} is empty", f"write 'AUTO', or a format of {TOKENS_USAGE}")
    spark, python = [], []
    position = 0
    while position < len(text):
        char = text[position]
        if char == '"':
            end = text.find('"', position + 1)
            if end < 0:
                raise LakeError(
                    f"{option} = '{text}' opens a quoted text it does not close",
                    'close the double quote: "T"',
                )
            literal = text[position + 1 : end]
            spark.append("'" + literal.replace("'", "''") + "'" if literal else "")
            python.append(literal.replace("%", "%%"))
            position = end + 1
        elif char in _LITERALS:
            spark.append(char)
            python.append(char)
            position += 1
        else:
            token = next((t for t in _TOKENS if text[position:].upper().startswith(t)), None)
            if token is None:
                word = _WORD.match(text, position)
                raise LakeError(
                    f"{option} = '{text}': {word.group() if word else char} is not a supported "
                    "format token",
                    f'use {TOKENS_USAGE}, and put other text in double quotes ("T")',
                )
            spark.append(_TOKENS[token][0])
            python.append(_TOKENS[token][1])
            position += len(token)
    return DatetimeFormat(text, "".join(spark), "".join(python))


def java_charset(name: str) -> str:
    """The Java charset Spark decodes files with, for Snowflake's name of it (in any case, with
    or without its dashes)."""
    charset = _ENCODINGS.get(_bare(name))
    if charset is None:
        raise LakeError(f"ENCODING = '{name}' is not a supported encoding", ENCODINGS_USAGE)
    return charset


def _bare(name: str) -> str:
    return name.strip().upper().replace("-", "").replace("_", "")


def skip_header(options: dict[str, str]) -> int:
    """OPTIONS('skip_header' = 'n'): the lines at the top of each CSV file that are no records."""
    text = options.get(SKIP_HEADER, "0").strip()
    if not _LINES.fullmatch(text):
        raise LakeError(
            f"OPTIONS('skip_header' = '{text}') is not a number of lines",
            "write OPTIONS('skip_header' = 'n') with n a whole number, 0 or more",
        )
    if int(text) and options.get("header", "false").lower() == "true":
        raise LakeError(
            "OPTIONS('skip_header') skips lines, 'header' = 'true' reads the first as the names",
            "keep one of them: skip_header for lines to drop, header for a header to match by",
        )
    return int(text)


@dataclass(frozen=True)
class FormatOptions:
    """How a COPY reads its files' values: lines to skip, strings that mean NULL, date and
    timestamp formats, the files' character set (None: Spark's own default)."""

    skip_header: int = 0
    null_if: tuple[str, ...] = ()
    date_format: DatetimeFormat | None = None
    timestamp_format: DatetimeFormat | None = None
    encoding: str | None = None

    def spark_options(self) -> dict[str, str]:
        """The options Spark's reader takes for them."""
        found = {"encoding": self.encoding} if self.encoding else {}
        if self.date_format:
            found["dateformat"] = self.date_format.spark
        if self.timestamp_format:
            found["timestampformat"] = self.timestamp_format.spark
            if "%z" not in self.timestamp_format.python:  # TIMESTAMP_NTZ values have no offset
                found["timestampntzformat"] = self.timestamp_format.spark
        return found

    @property
    def reads_leniently(self) -> bool:
        """Whether every read must mark bad records rather than fail: skipped lines are not
        records, and a listed NULL is no bad value, though Spark's strict reader takes both for
        bad ones."""
        return bool(self.skip_header or self.null_if)


@dataclass(frozen=True)
class CopySource(VolumeSource):
    """A COPY's files: the volume source, its OPTIONS taking the format options' Spark spellings,
    and the format options themselves."""

    formats: FormatOptions = field(default_factory=FormatOptions)


def formats_of(source: VolumeSource) -> FormatOptions:
    """A source's format options (a SELECT's volume source has none of its own)."""
    return source.formats if isinstance(source, CopySource) else FormatOptions()


def copy_source(source: VolumeSource, formats: FormatOptions) -> CopySource:
    """The COPY's source with its format options: checked against the file format, and their
    Spark spellings over the statement's OPTIONS."""
    lines = skip_header(source.options)
    if lines and source.file_format != "CSV":
        raise LakeError(
            f"OPTIONS('skip_header') is for CSV files, not {source.file_format}",
            "drop skip_header",
        )
    if source.file_format == "PARQUET" and formats != FormatOptions():
        raise LakeError(
            "NULL_IF, DATE_FORMAT, TIMESTAMP_FORMAT and ENCODING are for CSV and JSON files; "
            "Parquet files carry their types",
            "drop them from the COPY",
        )
    options = {k: v for k, v in source.options.items() if k != SKIP_HEADER}
    return CopySource(
        source.volume,
        source.file_format,
        source.columns,
        {**options, **formats.spark_options()},
        source.files,
        source.subdirectory,
        replace(formats, skip_header=lines),
    )
