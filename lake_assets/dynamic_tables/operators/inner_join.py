"""Inner joins of tables (or one table): the delta rule. Over references R1…Rn the change is
Σ_j new(R1…Rj-1) ⋈ ΔRj ⋈ old(Rj+1…Rn): each changed reference's rows gained and lost, joined
with the references before it as read now and those after it as last read."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.runtime.netting import signed
from lake_assets.dynamic_tables.runtime.queries import references, rewrite
from lake_assets.dynamic_tables.runtime.sources import Changes

_JOIN = "Δ(A ⋈ B) = ΔA ⋈ B now + A as last read ⋈ ΔB"

_JOIN = "Δ(A ⋈ B) = ΔA ⋈ B now + A as last read ⋈ ΔB"


@dataclass(frozen=True)
class InnerJoin(Branch):
    """Inner joins of tables (or one table): the delta rule."""

    @property
    def rule(self) -> str:
        return _JOIN

    @property
    def join_label(self) -> str | None:
        return "Inner join" if len(references(self.select)) > 1 else None

    def signed_rows(self, changes: Changes, names: list[str], index: int) -> list[DataFrame]:
        parts: list[DataFrame] = []
        refs = [table.name.lower() for table in references(self.select)]
        for j, name in enumerate(refs):
            if not changes.reads[name].changed:
                continue
            for sign, kind in ((1, "pos"), (-1, "neg")):

                def relation(index: int, table: str, j: int = j, kind: str = kind) -> str:
                    read = changes.reads[table]
                    if index == j:
                        return read.view(kind)
                    if index > j and read.changed:
                        return changes.last_read(read)
                    return read.view("new")

                frame = changes.spark.sql(rewrite(self.select, relation)).toDF(*names)
                parts.append(signed(frame, sign))
        return parts
