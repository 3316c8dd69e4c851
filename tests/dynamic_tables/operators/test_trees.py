"""Each operator as the lowering builds it, without Spark: on the cases of fixtures/trees.txt, a
query's root operator, the tree the refresh runs (each line the operator's own label and rule),
its stages with their columns, and the hidden state columns the table keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.operators.base import Operator, Plan
from lake_assets.dynamic_tables.operators.described import described
from tests.dynamic_tables.fixture_cases import read_cases

FIXTURES = Path(__file__).parent / "fixtures"


def lines(tree: Operator, depth: int, labels: dict[str, str]) -> list[str]:
    """The tree as EXPLAIN prints it, stages by their number."""
    found = []
    for line in tree.lines(depth):
        text = f"{'  ' * line.depth}{line.operator}"
        for name, label in labels.items():
            text = text.replace(name, label)
        found.append(f"{text} | {line.rule}")
    return found


def written(plan: Plan) -> list[str]:
    """The plan's root (or FULL and why), its tree and stages, and its hidden columns."""
    if plan.reason:
        return [f"FULL: {plan.reason}", *lines(described(plan.query), 0, {}), "hidden: -"]
    stages = list(plan.all_stages())
    labels = {stage.name: f"stage {number}" for number, stage in enumerate(stages, 1)}
    found = [type(plan.tree).__name__, *lines(plan.tree, 0, labels)]
    for stage in stages:
        found.append(f"{labels[stage.name].capitalize()} | {', '.join(stage.columns)}")
        found += lines(stage.plan.tree, 1, labels)
    return [*found, f"hidden: {', '.join(plan.hidden) or '-'}"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param(case.given, case.expected, id=case.title)
        for case in read_cases(FIXTURES / "trees.txt", by_line=True)
    ],
)
def test_each_query_lowers_to_its_tree_of_operators(sql: str, expected: list[str]) -> None:
    assert written(classify(sqlglot.parse_one(sql, read="spark"))) == expected
