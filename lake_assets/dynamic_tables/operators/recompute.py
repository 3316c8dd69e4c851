"""Recompute by key: GROUP BY with any aggregate or HAVING, DISTINCT, windows with a shared
PARTITION BY, QUALIFY; and UNION, INTERSECT and EXCEPT, keyed by their rows. The source rows the
change gains and loses give the keys (their branch's own rule); the query is run on the sources
restricted to those keys; the table's rows of those keys are compared with it, and only rows
that differ are written, so readers of the table see the net difference alone."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from lake_assets.core import names
from lake_assets.core.delta import Commit
from lake_assets.dynamic_tables.analyses.shapes import keyed_keys, select_problem
from lake_assets.dynamic_tables.operators.base import Classify, Line, Operator, Root, Step
from lake_assets.dynamic_tables.operators.branch import ROWWISE, Branch
from lake_assets.dynamic_tables.operators.branches import branch, signed_rows
from lake_assets.dynamic_tables.operators.rows import items_text, set_rule, set_tree
from lake_assets.dynamic_tables.runtime.by_key import Touched, read_now
from lake_assets.dynamic_tables.runtime.netting import col, difference
from lake_assets.dynamic_tables.runtime.queries import key_name, key_rows, rows_restricted
from lake_assets.dynamic_tables.runtime.sources import null_safe
from lake_assets.dynamic_tables.runtime.writing import Write, write_changes

TOUCHED_KEYS = names.hidden("touched_keys")
_KEYED = (
    "the keys of the rows the change gains or loses: the query is run for those keys alone, "
    "and only rows that differ from the table's are written"
)
_WITHIN = "recomputed for the keys the change touches"
_CLAUSES = (
    ("group", "GROUP BY"), ("having", "HAVING"), ("distinct", "DISTINCT"), ("qualify", "QUALIFY"),
)  # fmt: skip


@dataclass(frozen=True)
class RecomputeByKey(Root):
    """`query` keyed by `keys` (by position in its items; none for a set operation, keyed by all
    its columns), whose touched keys `touched` gives (each branch's rows, as their keys)."""

    query: exp.Expr
    keys: tuple[tuple[int, exp.Expr], ...]
    touched: tuple[Branch, ...]

    @property
    def children(self) -> tuple[Operator, ...]:
        return self.touched

    @property
    def label(self) -> str:
        if not self.keys:
            return "Recompute by row (all columns)"
        return "Recompute by key " + ", ".join(key.sql(dialect="spark") for _, key in self.keys)

    @property
    def rule(self) -> str:
        return _KEYED

    @property
    def hidden(self) -> tuple[str, ...]:
        return tuple(key_name(index) for index, _ in self.keys)

    def stateful(self, query: exp.Expr) -> exp.Expr:
        if not isinstance(query, exp.Select):
            return query
        keys = [exp.alias_(key.copy(), key_name(index)) for index, key in self.keys]
        return query.copy().select(*keys, copy=False)

    def lines(self, depth: int = 0) -> Iterator[Line]:
        yield Line(depth, self.label, self.rule)
        if not self.keys:
            branches = iter(self.touched)

            def leaf(_: exp.Expr) -> Operator:
                each = next(branches)
                return Step(f"Project {items_text(each.select)}", ROWWISE, (each,))

            yield from set_tree(self.query, leaf, set_rule).lines(depth + 1)
            return
        select = self.query
        assert isinstance(select, exp.Select), "a keyed query is one SELECT"
        kinds = [label for clause, label in _CLAUSES if select.args.get(clause)]
        kinds += ["windows"] if select.find(exp.Window) else []
        yield Line(depth + 1, " + ".join(kinds) or f"Project {items_text(select)}", _WITHIN)
        yield from self.touched[0].lines(depth + 2)

    def write(self, job: Write) -> Commit:
        changes = self.changes(job).localCheckpoint()
        return write_changes(job, changes, job.held().schema)

    def changes(self, job: Write) -> DataFrame:
        """The table's net change (all its columns + MULT): the touched keys' rows recomputed
        (+1) against the table's rows of those keys (-1), netted."""
        everything = job.held().columns
        if self.keys:
            columns = held_by = [key_name(index) for index, _ in self.keys]
        else:
            columns, held_by = [key_name(index) for index in range(len(everything))], everything
        changes = job.changes()
        keys = signed_rows(changes, self.touched, columns).select(*columns)
        touched = Touched.held(keys, TOUCHED_KEYS)
        restricted = (
            touched.restricted(
                self.stateful(self.query), [(key_name(i), key) for i, key in self.keys]
            )
            if self.keys
            else rows_restricted(self.query, columns, touched.view, touched.types)
        )
        key_fields = [field for field in job.held().schema.fields if field.name in held_by]
        held = (
            job.held()
            .alias("t")
            .join(
                F.broadcast(touched.frame.toDF(*held_by)).alias("k"),
                on=F.expr(null_safe("t", "k", key_fields)),
                how="left_semi",
            )
            .select(*map(col, everything))
        )
        return difference(read_now(changes, restricted), held, everything)


def keyed(select: exp.Select) -> RecomputeByKey | None:
    """GROUP BY (any aggregate, HAVING), DISTINCT and windows with a PARTITION BY over inner
    joins of tables: the keys a change touches are recomputed."""
    keys = keyed_keys(select)
    if not keys:
        return None
    return RecomputeByKey(select, tuple(enumerate(keys)), (branch(key_rows(select, keys)),))


def lower(query: exp.Expr, classify: Classify) -> RecomputeByKey | str | None:
    """A SELECT whose rows cannot change row by row (DISTINCT, HAVING, windows …): recomputed
    by its key, or why it is refreshed in full."""
    if not isinstance(query, exp.Select):
        return None
    problem = select_problem(query)
    return (keyed(query) or problem) if problem else None
