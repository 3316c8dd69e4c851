"""The tree a dynamic table refreshes by: operators with children, a root that writes the table,
and the stages (parts kept in hidden tables) the root's query reads. EXPLAIN prints this tree;
the refresh runs it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlglot import exp

from lake_assets.core.delta import Commit
from lake_assets.dynamic_tables.refreshes import RefreshMode
from lake_assets.dynamic_tables.runtime.sources import register_sources
from lake_assets.dynamic_tables.runtime.writing import Write, write_full

# Every operator's rule when its query refreshes FULL.
RECOMPUTED = "recomputed"


@dataclass(frozen=True)
class Line:
    """One row of EXPLAIN: an operator at its depth in the tree, and the rule it refreshes by."""

    depth: int
    operator: str
    rule: str


class Operator(ABC):
    """A node of the tree: what it computes (its label), from which children, by which rule."""

    @property
    @abstractmethod
    def label(self) -> str:
        """EXPLAIN's text of the operator."""

    @property
    @abstractmethod
    def rule(self) -> str:
        """How its output's change is computed from its inputs' changes."""

    @property
    def children(self) -> tuple[Operator, ...]:
        return ()

    def join_keys(self) -> dict[str, tuple[str, ...]]:
        """Each table's columns its rule reads a large table by, only in the ranges of a change's
        keys: Delta skips the table's files by those columns when they are laid out by them."""
        return {}

    def lines(self, depth: int = 0) -> Iterator[Line]:
        """The operator's line, then its children's, one level deeper."""
        yield Line(depth, self.label, self.rule)
        for child in self.children:
            yield from child.lines(depth + 1)


@dataclass(frozen=True)
class Step(Operator):
    """An operator a statement runs as part of its parent's rule (a projection, a filter, a scan),
    or one of a query refreshed FULL: its line, and its children's."""

    text: str
    how: str
    inputs: tuple[Operator, ...] = ()

    @property
    def label(self) -> str:
        return self.text

    @property
    def rule(self) -> str:
        return self.how

    @property
    def children(self) -> tuple[Operator, ...]:
        return self.inputs


class Root(Operator):
    """The operator whose output is the dynamic table: it keeps the table's hidden state columns
    and writes the refresh's change."""

    @property
    def hidden(self) -> tuple[str, ...]:
        """Hidden columns the table keeps after its visible ones."""
        return ()

    @property
    def deletion_vectors(self) -> bool:
        """A change deletes rows scattered over a table as large as its sources: deletion
        vectors mark them instead of rewriting every file (an aggregate's refresh rewrites its
        few files anyway, which measured faster)."""
        return True

    @property
    def reads_changes(self) -> bool:
        """Whether its rule reads the sources' changes (a top-N reads its ranked rows')."""
        return True

    @property
    def reads_only_changes(self) -> bool:
        """Whether a change reads the sources' changes and the table alone, not the sources."""
        return False

    def stateful(self, query: exp.Expr) -> exp.Expr:
        """The query with the hidden state columns appended, as a FULL refresh computes them."""
        return query

    def stages(self) -> tuple[Stage, ...]:
        """Stages its own parts keep (a top-N's ranked rows read stages of their own)."""
        return ()

    @abstractmethod
    def write(self, job: Write) -> Commit:
        """The sources' changes applied to the table in the refresh's one commit."""

    def write_full(self, job: Write) -> Commit:
        """The query's whole result written, only the rows that differ from the table's."""
        return write_full(job)


@dataclass(frozen=True)
class Stage:
    """A part of a query kept in a hidden table maintained by its own plan, read by the query
    under `name` as a table of `columns`."""

    name: str
    plan: Plan
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """A query as it refreshes: the tree of `root` over its stages, or the FULL `reason` and the
    tree of what is recomputed."""

    query: exp.Expr
    tree: Operator
    reason: str | None = None
    stages: tuple[Stage, ...] = ()

    @property
    def root(self) -> Root:
        assert isinstance(self.tree, Root), "an incremental plan"
        return self.tree

    @property
    def hidden(self) -> tuple[str, ...]:
        return self.tree.hidden if isinstance(self.tree, Root) else ()

    @property
    def deletion_vectors(self) -> bool:
        return self.tree.deletion_vectors if isinstance(self.tree, Root) else True

    @property
    def stateful(self) -> exp.Expr:
        """The query with the hidden state columns its table keeps."""
        return self.tree.stateful(self.query) if isinstance(self.tree, Root) else self.query

    def write(self, job: Write, full: bool) -> Commit:
        """The refresh's commit: the changes applied by the root, or its whole result."""
        if full:
            return self.tree.write_full(job) if isinstance(self.tree, Root) else write_full(job)
        job.metadata.mode = RefreshMode.INCREMENTAL
        if self.root.reads_changes:
            register_sources(job.spark, job.reads, changes=True)
        return self.root.write(job)

    def all_stages(self) -> Iterator[Stage]:
        """Every stage, each after the stages it reads, once: the order they refresh in."""
        seen: set[str] = set()
        inner = self.tree.stages() if isinstance(self.tree, Root) else ()
        for stage in (*self.stages, *inner):
            for each in (*stage.plan.all_stages(), stage):
                if each.name not in seen:
                    seen.add(each.name)
                    yield each


# Lowers a part of a query to its plan (a top-N's ranked rows): lowering.classify.
Classify = Callable[[exp.Expr], Plan]
# A lowering rule (lowering.LOWERINGS): the root of a query it claims, why the query refreshes
# FULL, or None to leave the query to the next rule.
Lowering = Callable[[exp.Expr, Classify], Root | str | None]
