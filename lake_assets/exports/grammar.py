"""CREATE CHANGELOG EXPORT and EXPORT CHANGELOG; SHOW, DESC and DROP take the forms every kind
shares (`SHOW CHANGELOG EXPORTS`, `DESC CHANGELOG EXPORT e`, `DROP CHANGELOG EXPORT [IF EXISTS]
e`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.core.names import checked_name
from lake_assets.exports.entry import DEFAULT_MAX_RETRIES, DEFAULT_STATUS_TABLE
from lake_assets.sql.grammar import Grammar, ObjectWords, StatementParser, finished
from lake_assets.sql.statements import Statement
from lake_assets.sql.tokens import TokenCursor
from lake_assets.volumes.grammar import FORMATS
from resources.storage import inside

CREATE_EXPORT = (
    "CREATE CHANGELOG EXPORT [IF NOT EXISTS] e FROM TABLE t TO TABLE target | TO VOLUME v "
    "[SUBDIRECTORY 'dir/'] [FILE_FORMAT = (TYPE = PARQUET|CSV|JSON)] [STATUS_TABLE = 'name'] "
    "[EXPORT_SEQUENCE_INFO = TRUE|FALSE] [MAX_RETRIES = n] [COMMENT '…']"
)
EXPORT_CHANGELOG = (
    "EXPORT CHANGELOG e (DATE => 'yyyyMMdd' | "
    "START_TIMESTAMP_MILLIS => n, END_TIMESTAMP_MILLIS => m)"
)
WORDS = ObjectWords("export", (("CHANGELOG", "EXPORT"),))
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class CreateExport(Statement):
    name: str
    source: str
    to_table: str | None = None
    to_volume: str | None = None
    subdirectory: str = ""
    file_format: str = "PARQUET"
    status_table: str = DEFAULT_STATUS_TABLE
    sequence_info: bool = False
    max_retries: int = DEFAULT_MAX_RETRIES
    comment: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class TimeRange:
    """Commit times [start, end) in epoch milliseconds; `day` when given as DATE (yyyyMMdd)."""

    start: int
    end: int
    day: str | None = None

    @classmethod
    def of_day(cls, day: str) -> TimeRange:
        """The UTC day `yyyyMMdd`."""
        try:
            midnight = datetime.strptime(day, "%Y%m%d").replace(tzinfo=UTC)
        except ValueError:
            raise LakeError(
                f"DATE '{day}' is not a day written yyyyMMdd", "write it as DATE => '20261123'"
            ) from None
        return cls(_millis(midnight), _millis(midnight + _DAY), day)

    @property
    def label(self) -> str:
        """How results, files and the UI name the range."""
        return f"date={self.day}" if self.day else f"range={self.start}-{self.end}"


@dataclass(frozen=True)
class ExportChangelog(Statement):
    name: str
    range: TimeRange


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


Options = dict[str, Any]


def _subdirectory(cursor: TokenCursor, options: Options) -> None:
    options["subdirectory"] = inside(cursor.string("a quoted subdirectory"), "SUBDIRECTORY")


def _file_format(cursor: TokenCursor, options: Options) -> None:
    cursor.expect_symbol(TokenType.EQ, "=")
    file_format = cursor.group(("TYPE",)).get("TYPE", "").upper()
    if file_format not in FORMATS:
        raise LakeError("FILE_FORMAT needs TYPE = PARQUET, CSV or JSON", f"write {CREATE_EXPORT}")
    options["file_format"] = file_format


def _status_table(cursor: TokenCursor, options: Options) -> None:
    cursor.expect_symbol(TokenType.EQ, "=")
    options["status_table"] = checked_name(
        cursor.string("a quoted status table name"), "a status table name"
    )


def _sequence_info(cursor: TokenCursor, options: Options) -> None:
    cursor.expect_symbol(TokenType.EQ, "=")
    options["sequence_info"] = cursor.boolean("EXPORT_SEQUENCE_INFO")


def _max_retries(cursor: TokenCursor, options: Options) -> None:
    cursor.expect_symbol(TokenType.EQ, "=")
    options["max_retries"] = cursor.integer("a number of retries (0 or more)")


def _comment(cursor: TokenCursor, options: Options) -> None:
    options["comment"] = cursor.string("a comment")


# CREATE CHANGELOG EXPORT's options after its target, in any order, each once.
_OPTIONS: dict[str, Callable[[TokenCursor, Options], None]] = {
    "SUBDIRECTORY": _subdirectory,
    "FILE_FORMAT": _file_format,
    "STATUS_TABLE": _status_table,
    "EXPORT_SEQUENCE_INFO": _sequence_info,
    "MAX_RETRIES": _max_retries,
    "COMMENT": _comment,
}
# The options that only an export to a volume takes.
_VOLUME_ONLY = ("subdirectory", "file_format")


def parse_create_export(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_EXPORT
    cursor.expect("CREATE", "CHANGELOG", "EXPORT")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("an export name")
    cursor.expect("FROM", "TABLE")
    source = cursor.name("the table whose changes it exports")
    cursor.expect("TO")
    target: Options = {}
    if cursor.accept("TABLE"):
        target["to_table"] = cursor.name("the table the records go to")
    else:
        cursor.expect("VOLUME")
        target["to_volume"] = cursor.name("the volume the records go to")
    options: Options = {}
    while not cursor.at_end():
        word = cursor.word()
        if word not in _OPTIONS or word.lower() in options:
            cursor.fail(" or ".join(w for w in _OPTIONS if w.lower() not in options))
        cursor.position += 1
        _OPTIONS[word](cursor, options)
    misplaced = [key for key in _VOLUME_ONLY if key in options and "to_table" in target]
    if misplaced:
        raise LakeError(
            f"{misplaced[0].upper()} is for an export to a volume; export {name} writes a table",
            f"leave {misplaced[0].upper()} out, or export TO VOLUME v",
        )
    return CreateExport(name, source, **target, **options, if_not_exists=if_not_exists)


def _named_number(cursor: TokenCursor, name: str) -> int:
    cursor.expect(name)
    cursor.expect_symbol(TokenType.FARROW, "=>")
    return cursor.integer(f"{name} in epoch milliseconds")


def parse_export_changelog(cursor: TokenCursor, grammar: Grammar) -> Statement:
    """Exactly one of DATE and the range, as EXPORT CHANGELOG requires."""
    cursor.usage = EXPORT_CHANGELOG
    cursor.expect("EXPORT", "CHANGELOG")
    name = cursor.name("an export name")
    cursor.expect_symbol(TokenType.L_PAREN, "(")
    if cursor.accept("DATE"):
        cursor.expect_symbol(TokenType.FARROW, "=>")
        window = TimeRange.of_day(cursor.string("a quoted day, yyyyMMdd"))
    else:
        if cursor.word() != "START_TIMESTAMP_MILLIS":
            cursor.fail("DATE or START_TIMESTAMP_MILLIS")
        start = _named_number(cursor, "START_TIMESTAMP_MILLIS")
        cursor.expect_symbol(TokenType.COMMA, ",")
        window = TimeRange(start, _named_number(cursor, "END_TIMESTAMP_MILLIS"))
        if window.end <= window.start:
            raise LakeError(
                f"END_TIMESTAMP_MILLIS {window.end} is not after START_TIMESTAMP_MILLIS "
                f"{window.start}",
                "give a range whose end is later than its start (the end is left out)",
            )
    if cursor.accept_symbol(TokenType.COMMA):
        raise LakeError(
            f"EXPORT CHANGELOG {name} takes either DATE or the range, not both",
            f"write {EXPORT_CHANGELOG}",
        )
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    return finished(cursor, ExportChangelog(name, window))


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "CHANGELOG", "EXPORT"): parse_create_export,
    ("EXPORT", "CHANGELOG"): parse_export_changelog,
}
