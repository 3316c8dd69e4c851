"""COPY's options about bad records: ON_ERROR, what a COPY or a pipe does with a file some of whose
records do not fit the table (SKIP_FILE is the default for COPY and pipes alike: one bad file
never blocks the rest); VALIDATION_MODE, what a COPY that only checks its files returns."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from lake_assets.core.errors import LakeError
from lake_assets.volumes.grammar import VolumeSource

ON_ERROR_USAGE = (
    "ON_ERROR = ABORT_STATEMENT | CONTINUE | SKIP_FILE | SKIP_FILE_<n> | 'SKIP_FILE_<n>%'"
)
_SKIP_FILE_LIMIT = re.compile(r"SKIP_FILE_(\d+)(%?)")


class ErrorMode(StrEnum):
    """ABORT_STATEMENT loads nothing when a file has a bad record; CONTINUE loads every good
    record and rejects the bad ones; SKIP_FILE fails a file whole (at a limit of bad records)."""

    ABORT_STATEMENT = "ABORT_STATEMENT"
    CONTINUE = "CONTINUE"
    SKIP_FILE = "SKIP_FILE"


@dataclass(frozen=True)
class OnError:
    """An error mode; SKIP_FILE's `limit` is the bad records (or `percent` of the file's
    records) at which the file is skipped, below it the bad records are rejected."""

    mode: ErrorMode = ErrorMode.SKIP_FILE
    limit: int = 1
    percent: bool = False

    def skips(self, rows: int, bad: int) -> bool:
        """Whether a file of `rows` records, `bad` of them bad, fails whole."""
        if bad == 0 or self.mode == ErrorMode.CONTINUE:
            return False
        if self.mode == ErrorMode.ABORT_STATEMENT:
            return True
        return bad * 100 >= self.limit * rows if self.percent else bad >= self.limit

    @property
    def rejects_rows(self) -> bool:
        """Whether some file may load with some of its records rejected."""
        return self.mode == ErrorMode.CONTINUE or (
            self.mode == ErrorMode.SKIP_FILE and (self.percent or self.limit > 1)
        )

    def on_failure(self, table: str) -> str:
        """What a pipe with this mode does with a bad file, as DESC PIPE says it."""
        stays = "stays in the volume and is loaded again only once it changes"
        rejected = f"its bad records go to rejected_rows('{table}')"
        if self.mode == ErrorMode.ABORT_STATEMENT:
            return "the run stops and loads nothing until the file is fixed or removed"
        if self.mode == ErrorMode.CONTINUE:
            return f"a file's good records load and {rejected}; a file that cannot be read {stays}"
        if not self.rejects_rows:
            return f"the file {stays}"
        limit = f"{self.limit} %" if self.percent else str(self.limit)
        return (
            f"a file with {limit} bad records or more {stays}; below that its good records load "
            f"and {rejected}"
        )

    def __str__(self) -> str:
        if self.mode != ErrorMode.SKIP_FILE or (self.limit == 1 and not self.percent):
            return self.mode.value
        return f"'SKIP_FILE_{self.limit}%'" if self.percent else f"SKIP_FILE_{self.limit}"


def parse_on_error(value: str) -> OnError:
    """The value after `ON_ERROR =`, quoted or not, in any case."""
    text = value.strip().upper()
    if text in ErrorMode.__members__:
        return OnError(ErrorMode(text))
    matched = _SKIP_FILE_LIMIT.fullmatch(text)
    if matched is None:
        raise LakeError(f"ON_ERROR = {value} is not an error mode", f"write {ON_ERROR_USAGE}")
    limit, percent = int(matched.group(1)), bool(matched.group(2))
    if limit < 1 or (percent and limit > 100):
        bound = "1 to 100 %" if percent else "at least 1"
        raise LakeError(f"ON_ERROR = {value}: the limit must be {bound}", f"write {ON_ERROR_USAGE}")
    return OnError(ErrorMode.SKIP_FILE, limit, percent)


# What COPY and pipes do unless told otherwise.
SKIP_FILE = OnError()
CONTINUE = OnError(ErrorMode.CONTINUE)


VALIDATION_USAGE = "VALIDATION_MODE = RETURN_ERRORS | RETURN_<n>_ROWS"
_RETURN_ROWS = re.compile(r"RETURN_(\d+)_ROWS")


@dataclass(frozen=True)
class Validation:
    """A COPY that writes nothing: it returns the records that would be rejected and the files
    that would fail (`rows` None), or the first `rows` records as they would load."""

    rows: int | None = None


def parse_validation(value: str) -> Validation:
    """The value after `VALIDATION_MODE =`, quoted or not, in any case."""
    text = value.strip().upper()
    if text in ("RETURN_ERRORS", "RETURN_ALL_ERRORS"):
        return Validation()
    matched = _RETURN_ROWS.fullmatch(text)
    if matched is None or int(matched.group(1)) < 1:
        raise LakeError(
            f"VALIDATION_MODE = {value} is not a validation mode", f"write {VALIDATION_USAGE}"
        )
    return Validation(int(matched.group(1)))


class ColumnMatch(StrEnum):
    """MATCH_BY_COLUMN_NAME: a file's columns taken by their place (NONE) or by their names."""

    NONE = "NONE"
    CASE_SENSITIVE = "CASE_SENSITIVE"
    CASE_INSENSITIVE = "CASE_INSENSITIVE"

    def describe(self) -> str:
        return "by their exact names" if self == ColumnMatch.CASE_SENSITIVE else "in any case"

    def key(self, name: str) -> str:
        """What two names must share to match."""
        return name if self == ColumnMatch.CASE_SENSITIVE else name.lower()


def parse_column_match(value: str) -> ColumnMatch:
    text = value.strip().upper()
    if text not in ColumnMatch.__members__:
        raise LakeError(
            f"MATCH_BY_COLUMN_NAME = {value} is not a way to match columns",
            "write MATCH_BY_COLUMN_NAME = CASE_SENSITIVE | CASE_INSENSITIVE | NONE",
        )
    return ColumnMatch(text)


def check_matching(source: VolumeSource, match: ColumnMatch) -> None:
    """Matching by name needs names: a CSV header, and no column list of the COPY's own."""
    if match == ColumnMatch.NONE:
        return
    if source.columns:
        raise LakeError(
            "MATCH_BY_COLUMN_NAME takes the columns from the files; the COPY also lists them",
            "drop the column list after FROM VOLUME v, or MATCH_BY_COLUMN_NAME",
        )
    # Parquet files are matched by name as Spark reads them: in any case.
    if source.file_format == "PARQUET" and match != ColumnMatch.CASE_INSENSITIVE:
        raise LakeError(
            "PARQUET files are matched to the table's columns in any case",
            "write MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE",
        )
    if source.file_format == "CSV" and not source.has_header:
        raise LakeError(
            "MATCH_BY_COLUMN_NAME reads a CSV file's column names from its header",
            "add OPTIONS('header' = 'true'), or drop MATCH_BY_COLUMN_NAME",
        )
