"""The rows a write is about to commit, judged by the table's expectations before its commit:
a FAIL refuses the write, DROP ROW keeps the rows that fail out (in the quarantine), WARN lets
them in; each expectation's counts ride in the write's commit record, so that they are kept
exactly once with it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from lake_assets.core.delta import commits_from
from lake_assets.core.errors import LakeError
from lake_assets.sql.statements import Dml, Query
from lake_assets.tables.entry import TableEntry
from lake_assets.tables.expectations import Expectation, Expecting, Violation
from lake_assets.tables.quarantine import quarantine

if TYPE_CHECKING:
    from lake_assets.core.kind import Bound, Context

# The commit record's field holding each expectation's [passed, failed] counts.
COUNTS = "expectations"
# How many times a statement's written rows and itself are bound, to read the same streams.
_BIND_TRIES = 3


@dataclass(frozen=True)
class Judged:
    """What a write commits after its rows were judged: `rows` and, by expectation name, how
    many passed and failed; `dropped` rows went to the quarantine instead."""

    rows: DataFrame
    counts: dict[str, list[int]] = field(default_factory=dict)
    dropped: int = 0

    def record(self) -> dict[str, Any]:
        """The fields the write's commit record carries."""
        return {COUNTS: self.counts} if self.counts else {}


def check_conditions(what: str, rows: DataFrame, expectations: Sequence[Expectation]) -> None:
    """Each condition is a boolean over `rows`, the columns of `what` ("table t"): Spark analyses
    it, no job runs."""
    if not expectations:
        return
    read = rows.selectExpr(*(f"({e.condition})" for e in expectations))
    for expectation, found in zip(expectations, read.schema.fields, strict=True):
        if not isinstance(found.dataType, BooleanType):
            raise LakeError(
                f"expectation {expectation.name} of {what} is not a condition: "
                f"({expectation.condition}) is {found.dataType.simpleString().upper()}",
                "write a boolean expression, e.g. amount > 0",
            )


def bound_alike(context: Context, rows: Query, statement: Dml) -> tuple[Bound, Bound]:
    """The rows a statement writes and the statement, bound to read the same stream ranges (each
    binding pins a stream's range up to its source's newest version): bound again when a commit
    to a stream's source came between the two, so that what is judged is what is written."""
    for _ in range(_BIND_TRIES):
        judging, writing = context.bind(rows), context.bind(statement)
        if set(judging.reads) == set(writing.reads):
            return judging, writing
    raise LakeError(
        f"the streams {statement.target}'s {statement.operation} reads kept changing while it "
        "was read",
        "run it again",
    )


def refuse_expectations(table: TableEntry, write: str) -> None:
    """A write that does not judge its rows yet refuses a table with expectations, rather than
    let rows in unjudged."""
    if table.expectations:
        names = ", ".join(e.name for e in table.expectations)
        raise LakeError(
            f"{write} does not judge rows by expectations yet, and table {table.name} has "
            f"expectations ({names}); nothing was written",
            f"write into a table without expectations, or first ALTER TABLE {table.name} "
            f"DROP CONSTRAINT {table.expectations[0].name} (and each other one)",
        )


def recorded_counts(location: str, version: int) -> dict[str, list[int]] | None:
    """The counts the table's commit at `version` carries, if it judged rows (read from the
    log, without Spark)."""
    commit = next(commits_from(None, location, version), None)
    metadata = commit.user_metadata if commit is not None and commit.version == version else None
    if not metadata or not metadata.startswith('{"lake_'):
        return None
    counts: dict[str, list[int]] | None = json.loads(metadata).get(COUNTS)
    return counts


def judged(table: Expecting, rows: DataFrame, tag: str, write: str) -> Judged:
    """Judge `rows` (the table's columns by name) about to be written by `write` ("INSERT into
    t"), tagged `tag`. Computed once (checkpointed), so that what is counted is what is written."""
    expectations = table.expectations
    if not expectations:
        return Judged(rows)
    rows = rows.localCheckpoint()
    failing = [F.expr(f"NOT {e.passes}") for e in expectations]
    totals = rows.agg(
        F.count(F.lit(1)).alias("rows"),
        *(F.count_if(fails).alias(f"f{i}") for i, fails in enumerate(failing)),
    ).first()
    total = totals["rows"] if totals is not None else 0
    failed = [totals[f"f{i}"] if totals is not None else 0 for i in range(len(expectations))]
    counts = {e.name: [total - n, n] for e, n in zip(expectations, failed, strict=True)}
    for expectation, fails, n in zip(expectations, failing, failed, strict=True):
        if expectation.on_violation == Violation.FAIL and n:
            raise _failed(table, expectation, rows.where(fails), n, total, write)
    drops = [
        (e, fails)
        for e, fails, n in zip(expectations, failing, failed, strict=True)
        if e.on_violation == Violation.DROP_ROW and n
    ]
    if not drops:
        return Judged(rows, counts)
    dropping = reduce(lambda a, b: a | b, (fails for _, fails in drops))
    first = reduce(
        lambda chosen, drop: chosen.when(drop[1], F.lit(drop[0].name)),
        drops[1:],
        F.when(drops[0][1], F.lit(drops[0][0].name)),
    )
    dropped = rows.where(dropping)
    quarantine(table, dropped, first, tag)
    return Judged(rows.where(~dropping), counts, dropped.count())


def _failed(
    table: Expecting, expectation: Expectation, rows: DataFrame, n: int, total: int, write: str
) -> LakeError:
    sample = rows.first()
    shown = ", ".join(f"{k}={v!r}" for k, v in (sample.asDict() if sample else {}).items())
    return LakeError(
        f"{write} violates expectation {expectation.name} ({expectation.condition}, ON "
        f"VIOLATION FAIL) in {n} of {total} rows, e.g. ({shown}); nothing was written",
        f"fix those rows, or relax it: {_relaxing(table, expectation)}",
    )


def _relaxing(table: Expecting, expectation: Expectation) -> str:
    """The statement that drops the expectation: a dynamic table is created again without it."""
    if isinstance(table, TableEntry):
        return f"ALTER TABLE {table.name} DROP CONSTRAINT {expectation.name}"
    return f"CREATE OR REPLACE DYNAMIC TABLE {table.name} without it"
