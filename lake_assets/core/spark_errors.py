"""Spark and Delta failures, read in one place: one-line LakeErrors that name our objects, not
paths; what a failure says happened (a lost race, storage that did not answer); and the one retry
loop, so that writers differ only in which failures they try again."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from enum import Flag, auto
from typing import TypeVar

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from lake_assets.core.errors import SEE_THE_CAUSE, LakeError

T = TypeVar("T")

_CONDITION = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]\s*(.*)")
_SQLSTATE = re.compile(r"\s*SQLSTATE:\s*\w+\.?\s*$")

# Fixes by error condition (Spark's and Delta's); the longest matching prefix wins.
_FIXES = {
    "UNRESOLVED_COLUMN": "check the column names with DESC TABLE",
    "UNRESOLVED_ROUTINE": "check the function name in Spark SQL's function list",
    "CAST_INVALID_INPUT": "make the value fit the column's type (DESC TABLE shows it) or CAST it",
    "INSERT_COLUMN_ARITY_MISMATCH": (
        "give one value per column in DESC TABLE order, or name the columns: INSERT INTO t (a, b) …"
    ),
    "INCOMPATIBLE_DATA_FOR_TABLE": "make the values fit the column types shown by DESC TABLE",
    "DATATYPE_MISMATCH": "make both sides the same type, for example with CAST",
    "NUMERIC_VALUE_OUT_OF_RANGE": "make the value fit the column's precision and scale",
    "CAST_OVERFLOW": "make the value fit the column's type (DESC TABLE shows it)",
    "DELTA_EXCEED_CHAR_VARCHAR_LIMIT": "shorten the value or widen the column",
    "DELTA_NOT_NULL_CONSTRAINT_VIOLATED": "give the column a value",
    "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE": (
        "make the MERGE source match each target row at most once (deduplicate it first)"
    ),
    "DELTA_CONCURRENT": "another writer changed the table at the same moment; run it again",
    "DELTA_METADATA_CHANGED": (
        "another statement changed the table's columns or properties at the same moment; "
        "run it again"
    ),
    "PARSE_SYNTAX_ERROR": "check the statement's syntax",
    "DIVIDE_BY_ZERO": "guard the divisor, for example with try_divide",
    "MISSING_AGGREGATION": "add the column to GROUP BY or wrap it in an aggregate",
    "FAILED_TO_PARSE_TOO_COMPLEX": (
        "split the statement: compute its inner parts as tables or views first"
    ),
}
_DEFAULT_FIX = SEE_THE_CAUSE
# Fixes for failures whose condition has none (or that have no condition), by a mark anywhere in
# their text: S3A's exception names the missing credentials, the SDK's innermost cause does not.
_NO_CREDENTIALS = (
    "give every Spark process AWS credentials: export AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY where the driver and a cluster's workers start (executors inherit "
    "the worker's environment), or give the machines an instance role"
)
_CAUSE_FIXES = {
    "NoAuthWithAWSException": _NO_CREDENTIALS,
    "NoAwsCredentialsException": _NO_CREDENTIALS,
    "SdkClientException: Unable to load credentials": _NO_CREDENTIALS,
    "java.lang.StackOverflowError": (
        "the statement nests deeper than Spark's parser goes: split it, computing its inner "
        "parts as tables or views first"
    ),
}
_CAUSE = re.compile(r"^Caused by: ([\w.$]+): (.*)$", re.MULTILINE)
# The Java exception a call into the JVM raised, as py4j's text names it: `: java.lang.X[: …]`.
_JAVA_ERROR = re.compile(r"^: ([\w.$]+)(?:: (.*))?$", re.MULTILINE)


def _condition_and_message(error: BaseException) -> tuple[str, str] | None:
    if isinstance(error, PySparkException):
        # str(), not getMessage(): Spark's message reader does not know Delta's error classes.
        return error.getCondition() or "", str(error)
    if type(error).__name__ == "Py4JJavaError":
        # Task failures wrap the real cause; the innermost conditioned message is the useful one.
        found = _CONDITION.findall(str(error))
        if found:
            return found[-1]
        causes = _CAUSE.findall(str(error))
        if causes:  # "An error occurred while calling o82.save" says nothing: the cause does
            name, message = causes[-1]
            return "", f"{name.rsplit('.', 1)[-1]}: {message}"
        raised = _JAVA_ERROR.search(str(error))
        if raised:
            name, message = raised.groups()
            short = name.rsplit(".", 1)[-1]
            return "", f"{short}: {message}" if message else short
        return "", str(error).splitlines()[0]
    return None


def translate_spark_error(error: BaseException, locations: Mapping[str, str]) -> LakeError | None:
    """A LakeError for a Spark/Delta failure, or None when `error` did not come from Spark."""
    found = _condition_and_message(error)
    if found is None:
        return None
    condition, message = found
    match = _CONDITION.match(message)
    text = match.group(2) if match else message
    text = _SQLSTATE.sub("", text.strip().splitlines()[0] if text.strip() else condition)
    for location, name in sorted(locations.items(), key=lambda item: -len(item[0])):
        text = re.sub(r"(`?delta`?\.)?`?(file:)?" + re.escape(location) + "`?", name, text)
    prefixes = [prefix for prefix in _FIXES if condition.startswith(prefix)]
    causes = [fix for cause, fix in _CAUSE_FIXES.items() if cause in str(error)]
    fix = _FIXES[max(prefixes, key=len)] if prefixes else next(iter(causes), _DEFAULT_FIX)
    label = f"[{condition}] " if condition else ""
    return LakeError(f"{label}{text}", fix)


def as_lake_error(error: Exception, locations: Mapping[str, str]) -> LakeError:
    """Any failure of a run (a refresh, a task) as the one line it records and raises: Spark's
    translated, any other its first line (its type's name when it has no text), the whole error
    left for its cause."""
    translated = translate_spark_error(error, locations)
    if translated is not None:
        return translated
    return LakeError(next(iter(str(error).splitlines()), type(error).__name__), SEE_THE_CAUSE)


# The exceptions Spark's failures reach Python as: a failure inside a write's tasks comes as
# py4j's Py4JJavaError (Spark's TASK_WRITE_FAILED), not as a PySparkException.
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)
# Delta's error when another writer only appended files since this statement read the table.
_LOST_APPEND_RACE = "DELTA_CONCURRENT_APPEND"
# Delta's error when a writer that committed the same app id won the race to the log.
_LOST_FENCE = "DELTA_CONCURRENT_TRANSACTION"
# Delta's error when another writer changed the table's metadata since this statement read it.
_LOST_METADATA_RACE = "DELTA_METADATA_CHANGED"


class Failure(Flag):
    """What a failure says happened, as a writer deciding on another try reads it; one failure
    can say several things (a write's error quotes its causes)."""

    NONE = 0
    # DELTA_CONCURRENT_APPEND (of any subclass): another writer only appended files since this
    # statement read the table, so running it again, reading the table afresh, succeeds.
    LOST_APPEND_RACE = auto()
    # DELTA_METADATA_CHANGED: another writer changed the table's metadata (an ALTER's columns,
    # its properties) since this statement read the table; the statement, planned again from the
    # table as it is now, commits.
    LOST_METADATA_RACE = auto()
    # DELTA_CONCURRENT_TRANSACTION (ConcurrentTransactionException): a writer with the same
    # fence committed while this one ran, which wrote nothing, like a skipped write.
    LOST_FENCE = auto()
    # Its text names one of Delta's concurrent-modification errors (DELTA_CONCURRENT…).
    CONCURRENT = auto()
    # Storage that did not answer: an I/O error, a timeout, a reset connection, S3's SlowDown.
    UNAVAILABLE = auto()
    # A file it needs is gone.
    FILE_MISSING = auto()

    @property
    def transient(self) -> bool:
        """Worth another try as it is: a lost race on a commit, or storage that did not answer,
        but not a missing file, which no try brings back."""
        worth = bool(self & (Failure.CONCURRENT | Failure.UNAVAILABLE))
        return worth and not self & Failure.FILE_MISSING


# Marks anywhere in a failure's text (its condition, or a Java exception's name or message).
_MARKS = {
    Failure.CONCURRENT: ("DELTA_CONCURRENT", _LOST_METADATA_RACE),
    Failure.UNAVAILABLE: ("IOException", "SocketTimeout", "Connection reset", "SlowDown"),
    Failure.FILE_MISSING: ("FileNotFoundException", "FILE_NOT_FOUND"),
}


def classify(error: BaseException) -> Failure:
    """What a failure says happened, from its condition and its text: the text too, as a
    failure inside tasks reaches Python without a condition."""
    condition = (error.getCondition() if isinstance(error, PySparkException) else None) or ""
    text = str(error)
    failure = Failure.NONE
    if condition.startswith(_LOST_APPEND_RACE) or f"[{_LOST_APPEND_RACE}" in text:
        failure |= Failure.LOST_APPEND_RACE
    if condition == _LOST_FENCE or f"[{_LOST_FENCE}]" in text:
        failure |= Failure.LOST_FENCE
    if condition == _LOST_METADATA_RACE or f"[{_LOST_METADATA_RACE}]" in text:
        failure |= Failure.LOST_METADATA_RACE
    for kind, marks in _MARKS.items():
        if any(mark in text for mark in marks):
            failure |= kind
    return failure


# Tries after the first, each after twice the wait of the one before (0.2 s … 3.2 s).
_RACE_RETRIES, _RACE_FIRST_WAIT_SECONDS = 5, 0.2


def retrying(
    action: Callable[[], T],
    *,
    when: Callable[[Failure], bool],
    attempts: int,
    first_wait: float,
    longest_wait: float = math.inf,
    errors: tuple[type[Exception], ...] = (Exception,),
) -> T:
    """`action`, tried again while it fails with one of `errors` that `when` finds worth another
    try, up to `attempts` tries in all: `first_wait` seconds before the second, twice the wait
    before each next one (at most `longest_wait`); any other failure, and the last try's,
    propagates as raised."""
    for attempt in range(attempts - 1):
        try:
            return action()
        except errors as error:
            if not when(classify(error)):
                raise
        time.sleep(min(first_wait * 2**attempt, longest_wait))
    return action()


def retrying_lost_append_races(run: Callable[[], object]) -> None:
    """Run a statement again (reading the table afresh) when it lost its commit only to another
    writer's append, so that both succeed; a true conflict (two writers rewriting the same
    files) still fails at once, with the "run it again" error."""
    retrying(
        run,
        when=lambda failure: Failure.LOST_APPEND_RACE in failure,
        attempts=_RACE_RETRIES + 1,
        first_wait=_RACE_FIRST_WAIT_SECONDS,
    )
