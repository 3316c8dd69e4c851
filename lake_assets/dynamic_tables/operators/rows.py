"""Rows that change row by row or by key (see branches): a SELECT list over its branch, and
UNION ALL, whose change is its branches' changes added up. Their change, netted, is the
table's: rows gained are inserted and rows lost deleted, one copy each."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlglot import exp

from lake_assets.core.delta import Commit
from lake_assets.dynamic_tables.analyses.shapes import nested_set_operation
from lake_assets.dynamic_tables.operators.base import Classify, Line, Operator, Root, Step
from lake_assets.dynamic_tables.operators.branch import ROWWISE, Branch
from lake_assets.dynamic_tables.operators.branches import branch, row_changes
from lake_assets.dynamic_tables.runtime.writing import Write, write_changes

UNION = "each branch's changes, added up"
BY_ROW = "recomputed for the rows the change touches, from each branch's rows of them"


def items_text(select: exp.Select) -> str:
    return ", ".join(e.sql(dialect="spark") for e in select.expressions)[:80]


@dataclass(frozen=True)
class Project(Operator):
    """A SELECT list computed over its branch's rows, each from its row alone."""

    branch: Branch

    @property
    def label(self) -> str:
        return f"Project {items_text(self.branch.select)}"

    @property
    def rule(self) -> str:
        return ROWWISE

    def lines(self, depth: int = 0) -> Iterator[Line]:
        yield Line(depth, self.label, self.rule)
        yield from self.branch.lines(depth + 1)


def set_tree(
    query: exp.Expr, leaf: Callable[[exp.Expr], Operator], rule: Callable[[str], str]
) -> Operator:
    """The operators of a set operation over its branches (`leaf` of each SELECT), each set
    operator with the rule `rule` gives its label."""
    if isinstance(query, exp.SetOperation):
        word = type(query).__name__.upper()
        label = f"{word} ALL" if not query.args.get("distinct") else word
        sides = (set_tree(query.this, leaf, rule), set_tree(query.expression, leaf, rule))
        return Step(label, rule(label), sides)
    if nested_set_operation(query):
        return set_tree(query.this, leaf, rule)
    return leaf(query)


def set_rule(label: str) -> str:
    """UNION ALL adds its branches' changes up; the others recompute the rows they touch."""
    return UNION if label == "UNION ALL" else BY_ROW


@dataclass(frozen=True)
class Rows(Root):
    """The table's rows, changed by `branches` (one SELECT, or the branches of a UNION ALL,
    laid out as `shape`)."""

    branches: tuple[Branch, ...]
    shape: Operator

    @property
    def children(self) -> tuple[Operator, ...]:
        return self.branches

    @property
    def label(self) -> str:
        return self.shape.label

    @property
    def rule(self) -> str:
        return self.shape.rule

    def lines(self, depth: int = 0) -> Iterator[Line]:
        return self.shape.lines(depth)

    def write(self, job: Write) -> Commit:
        changes = row_changes(job.changes(), self.branches, job.visible)
        # Computed once: the emptiness check, the pruning ranges and the MERGE source read it.
        return write_changes(job, changes.localCheckpoint(), job.held().schema)


def rows(query: exp.Expr, branches: tuple[Branch, ...]) -> Rows:
    """The root of a SELECT or a UNION ALL over `branches` (in the order they appear)."""
    remaining = iter(branches)
    shape = set_tree(query, lambda _: Project(next(remaining)), set_rule)
    return Rows(branches, shape)


def lower(query: exp.Expr, classify: Classify) -> Rows | None:
    """Any other SELECT: its rows change row by row, or by key (see branches)."""
    return rows(query, (branch(query),)) if isinstance(query, exp.Select) else None
