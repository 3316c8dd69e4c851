"""EXPLAIN DYNAMIC TABLE d and EXPLAIN CREATE DYNAMIC TABLE … AS …: the query's operators as a
tree, each with how a refresh maintains it, or what makes the query refresh FULL. No Spark."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace

from sqlglot import exp

from lake_assets.core.results import Result
from lake_assets.dynamic_tables.entry import RefreshModeChoice
from lake_assets.dynamic_tables.folds import AVG, COUNT_DISTINCT, MAX, MIN, SUM
from lake_assets.dynamic_tables.keys import join_key
from lake_assets.dynamic_tables.plan import (
    KEYED,
    PROJECTION,
    TOP_N,
    Plan,
    classify,
    nested_set_operation,
    notes,
    runnable,
)
from lake_assets.dynamic_tables.queries import references
from lake_assets.dynamic_tables.shapes import by_join_key, outer_join

COLUMNS = ["operator", "refresh"]
_INDENT = "  "
_SCAN = "reads its change data feed from the version the last refresh read to now"
_JOIN = "Δ(A ⋈ B) = ΔA ⋈ B now + A as last read ⋈ ΔB"
_BY_JOIN_KEY = (
    "the rows of the join keys the changed source rows hold (each from its own column), "
    "now less as last read"
)
_ROWWISE = "applied to the changed rows alone"
_TOP = (
    "the rows below are kept in a hidden table; the top rows are read from it, and only rows "
    "that enter or leave the top are written"
)
_UNION = "each branch's changes, added up"
_STAGE = (
    "kept in a hidden table of its own, refreshed first by the rule below; the query reads its "
    "changes as a source's"
)
_BY_ROW = "recomputed for the rows the change touches, from each branch's rows of them"
_PARAMETER = (
    "one value for every row, read now and as last read: when it moved, the keys of the rows "
    "whose condition it decides otherwise are touched too"
)
_FOLDED = "folded into the group's hidden state"
_KEYED = (
    "the keys of the rows the change gains or loses: the query is run for those keys alone, "
    "and only rows that differ from the table's are written"
)
_KEYED_CLAUSES = (
    ("group", "GROUP BY"), ("having", "HAVING"), ("distinct", "DISTINCT"), ("qualify", "QUALIFY"),
)  # fmt: skip
_AGGREGATE_RULES = {
    MIN: "folded; a group whose extreme was deleted is recomputed",
    MAX: "folded; a group whose extreme was deleted is recomputed",
    COUNT_DISTINCT: "the groups the change touches are recomputed",
}


def explain(
    query: exp.Expr, mode: RefreshModeChoice, columns: Mapping[str, Collection[str]]
) -> Result:
    """The operator tree under a first row that says how the whole refreshes (`columns`: the
    sources' columns by table name, which qualify the query's)."""
    kept = runnable(query, columns)
    plan = classify(kept)
    if mode is RefreshModeChoice.FULL:
        head = "FULL: REFRESH_MODE = FULL"
    elif plan.reason:
        head = f"FULL: {plan.reason}"
    else:
        head = "INCREMENTAL" + (
            " (AUTO: FULL when a change reaches 20 % of large sources)"
            if mode is RefreshModeChoice.AUTO
            else ""
        )
    incremental = head.startswith("INCREMENTAL")
    rows = [("dynamic table", head)]
    rows += [("note", note) for note in notes(query)]
    stages = list(plan.all_stages()) if incremental else []
    labels = {stage.name: f"stage {number}" for number, stage in enumerate(stages, 1)}
    trees = [("", plan.runs if incremental else kept, plan)]
    trees += [(labels[stage.name], stage.plan.runs, stage.plan) for stage in stages]
    for label, node, tree in trees:
        if label:
            rows.append((label.capitalize(), _STAGE))
        for depth, operator, rule in _operators(node, tree, 1 if label else 0):
            text = _labelled(f"{_INDENT * depth}{operator}", labels)
            rows.append((text, rule if incremental else "recomputed"))
    return Result(COLUMNS, rows)


def _labelled(text: str, labels: dict[str, str]) -> str:
    """Stages by their number, not their hidden tables' names."""
    for name, label in labels.items():
        text = text.replace(name, label)
    return text


def _operators(node: exp.Expr, plan: Plan, depth: int) -> Iterator[tuple[int, str, str]]:
    if plan.shape == TOP_N:
        top, ranked = plan.ranking
        order = ", ".join(term.sql(dialect="spark") for term in node.args["order"].expressions)
        yield depth, f"Top {top.limit.sql(dialect='spark')} by {order}", _TOP
        yield from _operators(ranked.runs, ranked, depth + 1)
        return
    if isinstance(node, exp.SetOperation) and plan.shape == KEYED:
        yield depth, "Recompute by row (all columns)", _KEYED
        yield from _operators(node, replace(plan, shape=PROJECTION), depth + 1)
        return
    if isinstance(node, exp.SetOperation):
        word = type(node).__name__.upper()
        label = f"{word} ALL" if not node.args.get("distinct") else word
        yield depth, label, _UNION if label == "UNION ALL" else _BY_ROW
        yield from _operators(node.this, plan, depth + 1)
        yield from _operators(node.expression, plan, depth + 1)
        return
    if nested_set_operation(node):
        yield from _operators(node.this, plan, depth)
        return
    if not isinstance(node, exp.Select):
        yield depth, node.sql(dialect="spark")[:80], ""
        return
    yield from _select(node, plan, depth)


def _select(select: exp.Select, plan: Plan, depth: int) -> Iterator[tuple[int, str, str]]:
    """A SELECT from the top: aggregate or projection, filter, joins, scans."""
    group = select.args.get("group")
    if plan.shape == KEYED:
        keys = ", ".join(key.sql(dialect="spark") for _, key in plan.keys)
        yield depth, f"Recompute by key {keys}", _KEYED
        kinds = [label for clause, label in _KEYED_CLAUSES if select.args.get(clause)]
        kinds += ["windows"] if select.find(exp.Window) else []
        label = " + ".join(kinds) or "Project " + _columns(select)
        yield depth + 1, label, "recomputed for the keys the change touches"
        depth += 1
    elif group is not None or plan.aggregates:
        keys = ", ".join(e.sql(dialect="spark") for e in group.expressions) if group else "()"
        yield depth, f"Aggregate GROUP BY {keys}", "groups touched by the change"
        for position, _ in plan.expressions:
            item = select.expressions[position].unalias().sql(dialect="spark")
            yield depth + 1, f"Project {item}", "computed from its aggregates' folded values"
        for aggregate in plan.aggregates:
            item = aggregate.call.sql(dialect="spark")
            rule = _AGGREGATE_RULES.get(aggregate.kind, _FOLDED)
            if aggregate.kind in (SUM, AVG):
                rule += " (of floating-point values: the groups touched are recomputed)"
            yield depth + 1, f"agg {item}", rule
    else:
        yield depth, f"Project {_columns(select)}", _ROWWISE
    depth += 1
    where = select.args.get("where")
    if where is not None:
        yield depth, f"Filter {where.this.sql(dialect='spark')[:80]}", _ROWWISE
        yield from _parameters(select, depth + 1)
        depth += 1
    for lateral in select.args.get("laterals") or []:
        yield depth, lateral.sql(dialect="spark").strip()[:80], _ROWWISE
        depth += 1
    scans = references(select)
    joins = select.args.get("joins") or []
    if any(map(outer_join, joins)):
        kinds = [" ".join(filter(None, (j.side, j.kind))) or "INNER" for j in joins]
        yield depth, f"{' + '.join(kinds)} JOIN on {join_key_text(select)}", _BY_JOIN_KEY
        depth += 1
    elif len(scans) > 1:
        yield depth, "Inner join", _JOIN
        depth += 1
    for table in scans:
        yield depth, f"Scan {table.name.lower()}", _SCAN


def _parameters(select: exp.Select, depth: int) -> Iterator[tuple[int, str, str]]:
    """The filter's uncorrelated scalar subqueries (see keys.Parameter)."""
    key = join_key(select) if by_join_key(select) else None
    for parameter in key.parameters if key is not None else ():
        yield depth, f"Parameter ({parameter.query.sql(dialect='spark')[:80]})", _PARAMETER


def _columns(select: exp.Select) -> str:
    return ", ".join(e.sql(dialect="spark") for e in select.expressions)[:80]


def join_key_text(select: exp.Select) -> str:
    key = join_key(select)
    return key.expression.sql(dialect="spark") if key else "?"
