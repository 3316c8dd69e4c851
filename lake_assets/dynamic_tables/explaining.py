"""EXPLAIN DYNAMIC TABLE d and EXPLAIN CREATE DYNAMIC TABLE … AS …: the tree of operators a
refresh runs (see lowering), each with its rule, or what makes the query refresh FULL. No
Spark."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from sqlglot import exp

from lake_assets.core.results import Result
from lake_assets.dynamic_tables.choosing import auto_rule
from lake_assets.dynamic_tables.entry import RefreshModeChoice
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.base import Operator, Plan
from lake_assets.dynamic_tables.operators.described import described
from lake_assets.dynamic_tables.rewrites import notes

COLUMNS = ["operator", "refresh"]
_INDENT = "  "
_STAGE = (
    "kept in a hidden table of its own, refreshed first by the rule below; the query reads its "
    "changes as a source's"
)


def explain(
    query: exp.Expr,
    mode: RefreshModeChoice,
    columns: Mapping[str, Collection[str]],
    layouts: Mapping[str, tuple[str, ...]] | None = None,
) -> Result:
    """The operator tree under a first row that says how the whole refreshes (`columns`: the
    sources' columns by table name, which qualify the query's; `layouts`: the columns the files
    of each large table are clustered by, which decide whether its restricted reads skip files)."""
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
    rows += [("note", note) for note in _layout_notes(plan, layouts or {})]
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


def _layout_notes(plan: Plan, layouts: Mapping[str, tuple[str, ...]]) -> Iterator[str]:
    """For each large table a change is joined to by a key its files are not clustered by: its
    restricted reads skip no file, and what would lay it out by the key."""
    keys: dict[str, list[str]] = {}
    for tree in (plan.tree, *(stage.plan.tree for stage in plan.all_stages())):
        for node in _walk(tree):
            for table, columns in node.join_keys().items():
                found = keys.setdefault(table, [])
                found += [column for column in columns if column not in found]
    for table, joined in keys.items():
        layout = layouts.get(table)
        if layout is None or {c.lower() for c in layout} & {c.lower() for c in joined}:
            continue
        key, again = joined[0], " FULL" if layout else ""  # FULL: files clustered otherwise too
        yield (
            f"{table} is read where {key} lies in the ranges of the change joined to it, but its "
            f"files are not laid out by {key}, so every file is read: ALTER TABLE {table} CLUSTER "
            f"BY ({key}), then OPTIMIZE {table}{again}"
        )


def _walk(node: Operator) -> Iterator[Operator]:
    yield node
    for child in node.children:
        yield from _walk(child)
