"""A SELECT's rows over its FROM, WHERE and lateral views (before grouping or a SELECT list), as
an operator: one rule per way its FROM is read gives its change (inner_join, keyed_join,
derived_key); its filter, lateral views and scans are its EXPLAIN lines."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import DataFrame
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.keys import Parameter
from lake_assets.dynamic_tables.operators.base import Line, Operator
from lake_assets.dynamic_tables.runtime.queries import references
from lake_assets.dynamic_tables.runtime.sources import Changes

ROWWISE = "applied to the changed rows alone"
_SCAN = "reads its change data feed from the version the last refresh read to now"
_PARAMETER = (
    "one value for every row, read now and as last read: when it moved, the keys of the rows "
    "whose condition it decides otherwise are touched too"
)


@dataclass(frozen=True)
class Branch(Operator):
    """A SELECT's rows over its FROM, WHERE and lateral views (before grouping), whose change
    one rule gives. Its EXPLAIN lines start at its filter: the root above says what it keeps."""

    select: exp.Select

    @property
    def label(self) -> str:
        return self.join_label or "Scan"

    @property
    def join_label(self) -> str | None:
        """The line of the rule that joins the scans, when there is one."""
        return None

    def lines(self, depth: int = 0) -> Iterator[Line]:
        where = self.select.args.get("where")
        if where is not None:
            yield Line(depth, f"Filter {where.this.sql(dialect='spark')[:80]}", ROWWISE)
            for parameter in self.parameters:
                text = parameter.query.sql(dialect="spark")[:80]
                yield Line(depth + 1, f"Parameter ({text})", _PARAMETER)
            depth += 1
        for lateral in self.select.args.get("laterals") or []:
            yield Line(depth, lateral.sql(dialect="spark").strip()[:80], ROWWISE)
            depth += 1
        if self.join_label is not None:
            yield Line(depth, self.join_label, self.rule)
            depth += 1
        for table in references(self.select):
            yield Line(depth, f"Scan {table.name.lower()}", _SCAN)

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return ()

    @abstractmethod
    def signed_rows(self, changes: Changes, names: list[str], index: int) -> list[DataFrame]:
        """The rows (`names` + MULT) the branch gains (+1) and loses (-1), not netted."""
