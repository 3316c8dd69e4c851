"""EXPLAIN DYNAMIC TABLE d and EXPLAIN CREATE DYNAMIC TABLE … AS …: the tree of operators a
refresh runs (see lowering), each with its rule, or what makes the query refresh FULL. No
Spark."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlglot import exp

from lake_assets.core.results import Result
from lake_assets.dynamic_tables.choosing import auto_rule
from lake_assets.dynamic_tables.entry import RefreshModeChoice
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.base import Operator
from lake_assets.dynamic_tables.operators.described import described
from lake_assets.dynamic_tables.rewrites import notes

COLUMNS = ["operator", "refresh"]
_INDENT = "  "
_STAGE = (
    "kept in a hidden table of its own, refreshed first by the rule below; the query reads its "
    "changes as a source's"
)


def explain(
    query: exp.Expr, mode: RefreshModeChoice, columns: Mapping[str, Collection[str]]
) -> Result:
    """The operator tree under a first row that says how the whole refreshes (`columns`: the
    sources' columns by table name, which qualify the query's)."""
    plan = classify(query, columns)
    rows = [("dynamic table", _head(mode, plan.reason))]
    rows += [("note", note) for note in notes(query)]
    if mode is RefreshModeChoice.FULL or plan.reason:
        return Result(COLUMNS, rows + _rows(described(plan.query), 0, {}))
    stages = list(plan.all_stages())
    labels = {stage.name: f"stage {number}" for number, stage in enumerate(stages, 1)}
    rows += _rows(plan.tree, 0, labels)
    for stage in stages:
        rows.append((labels[stage.name].capitalize(), _STAGE))
        rows += _rows(stage.plan.tree, 1, labels)
    return Result(COLUMNS, rows)


def _head(mode: RefreshModeChoice, reason: str | None) -> str:
    if mode is RefreshModeChoice.FULL:
        return "FULL: REFRESH_MODE = FULL"
    if reason:
        return f"FULL: {reason}"
    return "INCREMENTAL" + (f" (AUTO: {auto_rule()})" if mode is RefreshModeChoice.AUTO else "")


def _rows(tree: Operator, depth: int, labels: dict[str, str]) -> list[tuple[str, str]]:
    """The tree's lines, stages named by their number rather than their hidden tables' names."""
    rows = []
    for line in tree.lines(depth):
        text = f"{_INDENT * line.depth}{line.operator}"
        for name, label in labels.items():
            text = text.replace(name, label)
        rows.append((text, line.rule))
    return rows
