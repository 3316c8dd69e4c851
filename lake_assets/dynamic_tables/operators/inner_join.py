"""Inner joins of tables (or one table): the delta rule. Over references R1…Rn the change is
Σ_j new(R1…Rj-1) ⋈ ΔRj ⋈ old(Rj+1…Rn): each changed reference's rows gained and lost, joined
with the references before it as read now and those after it as last read.

A term reads the other references only where they can join the change: a reference the query
equates with ΔRj on a column is read where that column lies in the ranges of the change's values
(see pruning), so that Delta skips its files by their statistics when they are laid out by it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import DataFrame
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.equalities import equated
from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.runtime.netting import signed
from lake_assets.dynamic_tables.runtime.pruning import RESTRICT_MIN_ROWS, ranges, restricted
from lake_assets.dynamic_tables.runtime.queries import references, rewrite
from lake_assets.dynamic_tables.runtime.sources import Changes

_JOIN = "Δ(A ⋈ B) = ΔA ⋈ B now + A as last read ⋈ ΔB"
_RESTRICTED = (
    f"; a side of {RESTRICT_MIN_ROWS:,} rows or more is read only where its join key lies in "
    "the ranges of the change's"
)


@dataclass(frozen=True)
class InnerJoin(Branch):
    """Inner joins of tables (or one table): the delta rule."""

    @property
    def rule(self) -> str:
        return _JOIN + (_RESTRICTED if self.join_label else "")

    @property
    def join_label(self) -> str | None:
        return "Inner join" if len(references(self.select)) > 1 else None

    def join_keys(self) -> dict[str, tuple[str, ...]]:
        """Each table's columns the query equates with another reference: what its reads are
        restricted by when that reference changes (see _restricted)."""
        tables = references(self.select)
        keys: dict[str, tuple[str, ...]] = {}
        for table in tables:
            alias = table.alias_or_name.lower()
            for other in tables:
                if other is table:
                    continue
                pairs = equated(self.select, alias, other.alias_or_name.lower())
                found = keys.get(table.name.lower(), ())
                found += tuple(column for column, _ in pairs if column not in found)
                keys[table.name.lower()] = found
        return {name: columns for name, columns in keys.items() if columns}

    def signed_rows(self, changes: Changes, names: list[str], index: int) -> list[DataFrame]:
        parts: list[DataFrame] = []
        refs = [table.name.lower() for table in references(self.select)]
        for j, name in enumerate(refs):
            if not changes.reads[name].changed:
                continue
            term = self._restricted(changes, j)
            for sign, kind in ((1, "pos"), (-1, "neg")):

                def relation(index: int, table: str, j: int = j, kind: str = kind) -> str:
                    read = changes.reads[table]
                    if index == j:
                        return read.view(kind)
                    if index > j and read.changed:
                        return changes.last_read(read)
                    return read.view("new")

                frame = changes.spark.sql(rewrite(term, relation)).toDF(*names)
                parts.append(signed(frame, sign))
        return parts

    def _restricted(self, changes: Changes, j: int) -> exp.Select:
        """The query with each large reference equated with reference `j` read only where its
        column lies in the ranges of the values `j`'s change holds (a row outside them cannot
        join a changed row: the term's rows all hold a changed row of `j`)."""
        tables = references(self.select)
        large = [
            (i, table)
            for i, table in enumerate(tables)
            if i != j and restricted(changes.reads[table.name.lower()].rows)
        ]
        if not large:
            return self.select
        delta = changes.delta(changes.reads[tables[j].name.lower()])
        fields = {field.name.lower(): field for field in delta.schema.fields}
        select = self.select
        for _, table in large:
            view = changes.reads[table.name.lower()].view("new")
            held = {field.name.lower(): field for field in changes.spark.table(view).schema}
            alias = table.alias_or_name.lower()
            for column, key in equated(self.select, alias, tables[j].alias_or_name.lower()):
                field, target = fields.get(key.lower()), held.get(column.lower())
                if field is None or target is None or target.dataType != field.dataType:
                    continue
                found = ranges(delta, [field])
                if found is not None and found.bounds:
                    predicate = replace(found, column=target.name).sql(alias)
                    select = select.where(exp.condition(predicate, dialect="spark"))
                    break
        return select
