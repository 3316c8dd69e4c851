"""A table's expectations (`CONSTRAINT name EXPECT (condition) [ON VIOLATION …]`): declared,
parsed and checked here without Spark, so that whatever writes rows (DML, loads, later a dynamic
table) judges them by the same conditions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import ClassVar, Protocol, runtime_checkable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from lake_assets.core.entries import Column
from lake_assets.core.errors import LakeError
from lake_assets.sql.determinism import non_deterministic
from lake_assets.sql.tokens import TokenCursor

EXPECTATION = "CONSTRAINT name EXPECT (condition) [ON VIOLATION WARN | DROP ROW | FAIL]"


class Violation(StrEnum):
    """What a row that fails an expectation does to its write."""

    WARN = "WARN"  # written, and counted
    DROP_ROW = "DROP ROW"  # kept out of the table, in its quarantine
    FAIL = "FAIL"  # the whole write is refused


class Quarantined(StrEnum):
    """Which of its writes' dropped rows a relation's quarantine shows."""

    EVERY_WRITE = "EVERY_WRITE"  # a table's: each row once, from the write that dropped it
    NEWEST_WRITE = "NEWEST_WRITE"  # a dynamic table's: what its newest refresh leaves out


@dataclass(frozen=True)
class Expectation:
    """A condition every row written to a table must meet; a row whose condition is NULL meets
    it, as with SQL's CHECK. `columns` are the table's columns it reads, in their declared
    spelling, so that a column change can be refused while it does."""

    name: str
    condition: str
    on_violation: Violation = Violation.WARN
    columns: tuple[str, ...] = ()

    @property
    def passes(self) -> str:
        """Spark SQL that is true for a row meeting the expectation (NULL meets it)."""
        return f"COALESCE(({self.condition}), TRUE)"

    def declaration(self) -> str:
        return f"EXPECT ({self.condition}) ON VIOLATION {self.on_violation}"


@runtime_checkable
class Expecting(Protocol):
    """A relation whose writes are judged by expectations: a table, or a dynamic table's
    refreshes."""

    @property
    def name(self) -> str: ...

    @property
    def location(self) -> str: ...

    @property
    def version(self) -> int | None: ...

    @property
    def columns(self) -> tuple[Column, ...]: ...

    @property
    def expectations(self) -> tuple[Expectation, ...]: ...

    QUARANTINED: ClassVar[Quarantined]


def parse_expectation(cursor: TokenCursor) -> Expectation:
    """What follows CONSTRAINT: the name, the condition's text and what a violation does; the
    condition is checked against the table's columns by `declared_expectations`."""
    name = cursor.identifier("an expectation name")
    cursor.expect("EXPECT")
    condition = cursor.parenthesized("(condition)").strip()
    if not cursor.accept("ON", "VIOLATION"):
        return Expectation(name, condition)
    for violation in Violation:
        if cursor.accept(*violation.split()):
            return Expectation(name, condition, violation)
    cursor.fail("WARN, DROP ROW or FAIL")


def declared_expectations(
    what: str, columns: Sequence[Column], expectations: Sequence[Expectation]
) -> tuple[Expectation, ...]:
    """The expectations of `what` ("table t"), each named once and its condition checked:
    a deterministic expression over the table's own columns, without subqueries or aggregates;
    kept as written, with the columns it reads in their declared spelling."""
    names = [expectation.name.lower() for expectation in expectations]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise LakeError(
            f"expectation {twice[0]} is declared twice on {what}",
            "give every expectation a distinct name",
        )
    return tuple(_checked(what, columns, expectation) for expectation in expectations)


def _checked(what: str, columns: Sequence[Column], expectation: Expectation) -> Expectation:
    label = f"expectation {expectation.name} of {what}"
    try:
        condition = sqlglot.parse_one(expectation.condition, read="spark")
    except ParseError:
        raise LakeError(
            f"{label} cannot be read: ({expectation.condition})",
            "write the condition as a Spark SQL boolean expression over the table's columns",
        ) from None
    _refuse_shapes(label, condition)
    by_name = {column.name.lower(): column.name for column in columns}
    named: list[str] = []
    for column in condition.find_all(exp.Column):
        declared = by_name.get(column.name.lower())
        if column.table or declared is None:
            raise LakeError(
                f"{label} reads {column.sql(dialect='spark')}, which is not a column of {what}",
                f"name only its columns: {', '.join(by_name.values())}",
            )
        named += [declared] if declared not in named else []
    return replace(expectation, columns=tuple(named))


def _refuse_shapes(label: str, condition: exp.Expr) -> None:
    """A condition judges one row by its own values: no other rows, no clock, no chance."""
    for node in condition.walk():
        problem = None
        if isinstance(node, exp.Query | exp.Exists):
            problem = "a subquery"
        elif isinstance(node, exp.AggFunc | exp.Window):
            problem = "an aggregate"
        elif non_deterministic(node):
            problem = "a non-deterministic function"
        if problem is not None:
            raise LakeError(
                f"{label} uses {problem}: {node.sql(dialect='spark')}",
                "judge each row by its own columns with deterministic functions only",
            )


def passes_over(expectation: Expectation, values: Mapping[str, exp.Expr]) -> exp.Expr:
    """The expectation's test of a row about to be written, whose columns (by lower-cased name)
    hold `values`: a write's statement guards itself with it."""
    passes = sqlglot.parse_one(expectation.passes, read="spark")
    return passes.transform(
        lambda node: (
            exp.paren(values[node.name.lower()].copy())
            if isinstance(node, exp.Column) and node.name.lower() in values
            else node
        )
    )


def expectations_naming(
    expectations: Sequence[Expectation], column: str
) -> tuple[Expectation, ...]:
    """The expectations that read `column`."""
    return tuple(
        expectation
        for expectation in expectations
        if column.lower() in (name.lower() for name in expectation.columns)
    )
