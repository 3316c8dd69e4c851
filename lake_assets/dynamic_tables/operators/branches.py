"""A SELECT's change rules, one per way its FROM is read: over inner joins of references R1…Rn
the change is Σ_j new(R1…Rj-1) ⋈ ΔRj ⋈ old(Rj+1…Rn) (the delta rule); a query whose rows of one
key value come from source rows of that value (outer, semi and anti joins, subqueries, a derived
table with a key) gives its rows of the keys the change touches, now less as last read. Each
rule is a branch operator: the SELECT's filter, lateral views and scans are its children."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.by_key import Touched, now_less_before
from lake_assets.dynamic_tables.incremental import (
    SourceRead,
    as_last_read,
    view_as_last_read,
    view_or_self,
)
from lake_assets.dynamic_tables.keys import JoinKey, Parameter, join_key, key_of
from lake_assets.dynamic_tables.netting import col, netted, signed
from lake_assets.dynamic_tables.operators.base import Line, Operator
from lake_assets.dynamic_tables.queries import (
    key_name,
    key_rows,
    references,
    rewrite,
)
from lake_assets.dynamic_tables.shapes import by_join_key, derived_table, outer_join

ROWWISE = "applied to the changed rows alone"
_SCAN = "reads its change data feed from the version the last refresh read to now"
_JOIN = "Δ(A ⋈ B) = ΔA ⋈ B now + A as last read ⋈ ΔB"
_BY_JOIN_KEY = (
    "the rows of the join keys the changed source rows hold (each from its own column), "
    "now less as last read"
)
_PARAMETER = (
    "one value for every row, read now and as last read: when it moved, the keys of the rows "
    "whose condition it decides otherwise are touched too"
)
_DERIVED = (
    "the derived table's rows of the keys its changed source rows touch, read now less as last read"
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
    def signed_rows(
        self,
        spark: SparkSession,
        reads: dict[str, SourceRead],
        names: list[str],
        registered: set[str],
        index: int,
    ) -> list[DataFrame]:
        """The rows (`names` + MULT) the branch gains (+1) and loses (-1), not netted."""


@dataclass(frozen=True)
class InnerJoin(Branch):
    """Inner joins of tables (or one table): the delta rule."""

    @property
    def rule(self) -> str:
        return _JOIN

    @property
    def join_label(self) -> str | None:
        return "Inner join" if len(references(self.select)) > 1 else None

    def signed_rows(
        self,
        spark: SparkSession,
        reads: dict[str, SourceRead],
        names: list[str],
        registered: set[str],
        index: int,
    ) -> list[DataFrame]:
        parts: list[DataFrame] = []
        refs = [table.name.lower() for table in references(self.select)]
        for j, name in enumerate(refs):
            if not reads[name].changed:
                continue
            for sign, kind in ((1, "pos"), (-1, "neg")):

                def relation(index: int, table: str, j: int = j, kind: str = kind) -> str:
                    read = reads[table]
                    if index == j:
                        return read.view(kind)
                    if index > j and read.changed:
                        return view_as_last_read(spark, read, registered)
                    return read.view("new")

                frame = spark.sql(rewrite(self.select, relation)).toDF(*names)
                parts.append(signed(frame, sign))
        return parts


@dataclass(frozen=True)
class KeyedJoin(Branch):
    """Outer, semi and anti joins and subqueries: the rows of one key value come from source
    rows of that value (and the rows inner-joined to those), so the change is the branch's rows
    of the keys the changed rows reach, now (+1) less as last read (-1)."""

    key: JoinKey

    @property
    def rule(self) -> str:
        return _BY_JOIN_KEY

    @property
    def join_label(self) -> str | None:
        joins = self.select.args.get("joins") or []
        if not any(map(outer_join, joins)):
            return "Inner join" if len(references(self.select)) > 1 else None
        kinds = [" ".join(filter(None, (j.side, j.kind))) or "INNER" for j in joins]
        return f"{' + '.join(kinds)} JOIN on {self.key.expression.sql(dialect='spark')}"

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return self.key.parameters

    def signed_rows(
        self,
        spark: SparkSession,
        reads: dict[str, SourceRead],
        names: list[str],
        registered: set[str],
        index: int,
    ) -> list[DataFrame]:
        return _by_join_key(spark, self.select, self.key, reads, names, registered, index)


@dataclass(frozen=True)
class DerivedKey(Branch):
    """A derived table with a key (GROUP BY, DISTINCT, PARTITION BY): its rows of one key value
    come from its source rows of that value, so the change is the branch over the derived
    table's rows of the keys the changed source rows touch, now (+1) less as last read (-1)."""

    derived: exp.Subquery
    keys: tuple[exp.Expr, ...]
    touched: Branch

    @property
    def rule(self) -> str:
        return _DERIVED

    @property
    def join_label(self) -> str | None:
        keys = ", ".join(key.sql(dialect="spark") for key in self.keys)
        return f"Derived table by key {keys}"

    def signed_rows(
        self,
        spark: SparkSession,
        reads: dict[str, SourceRead],
        names: list[str],
        registered: set[str],
        index: int,
    ) -> list[DataFrame]:
        inner = self.derived.this
        columns = [key_name(position) for position in range(len(self.keys))]
        changed = self.touched.signed_rows(spark, reads, columns, registered, index)
        keys = reduce(DataFrame.unionAll, changed).select(*map(col, columns))
        touched = Touched.held(keys, hidden(f"derived_keys_{index}"))
        restricted = self.select.copy()
        within = derived_table(restricted)
        assert within is not None, "the copy reads the same derived table"
        within.set("this", touched.restricted(inner, list(zip(columns, self.keys, strict=True))))
        return now_less_before(spark, restricted, reads, names, registered)


def branch(select: exp.Select) -> Branch:
    """The rule a SELECT's rows change by (see the classes above)."""
    derived = derived_table(select)
    if derived is not None and isinstance(derived.this, exp.Select):
        keys = key_of(derived.this) or []
        touched = branch(key_rows(derived.this, keys))
        return DerivedKey(select, derived, tuple(keys), touched)
    key = join_key(select) if by_join_key(select) else None
    return KeyedJoin(select, key) if key is not None else InnerJoin(select)


def signed_rows(
    spark: SparkSession,
    branches: tuple[Branch, ...],
    reads: dict[str, SourceRead],
    names: list[str],
) -> DataFrame:
    """The rows (`names` + MULT) the branches' result gains (+1) and loses (-1), one part per
    changed reference (the delta rule), not netted."""
    registered: set[str] = set()
    parts = [
        part
        for index, each in enumerate(branches)
        for part in each.signed_rows(spark, reads, names, registered, index)
    ]
    return reduce(DataFrame.unionAll, parts)


def _by_join_key(
    spark: SparkSession,
    branch: exp.Select,
    key: JoinKey,
    reads: dict[str, SourceRead],
    names: list[str],
    registered: set[str],
    index: int,
) -> list[DataFrame]:
    """Outer, semi and anti joins and subqueries: the rows of one key value come from source
    rows of that value (and the rows inner-joined to those), so the change is the branch's rows
    of the keys the changed rows reach, now (+1) less as last read (-1)."""
    column = hidden("join_key")
    found = [
        keys.toDF(column)
        for number, parameter in enumerate(key.parameters)
        for keys in _decided_otherwise(spark, parameter, reads, registered, f"{index}_{number}")
    ]
    parameters = {alias for parameter in key.parameters for alias in parameter.aliases}
    for table in references(branch):
        read = reads[table.name.lower()]
        alias = table.alias_or_name.lower()
        if not read.changed or alias in parameters:
            continue
        for kind, others in (("pos", "new"), ("neg", "old")):
            if alias in key.columns:
                scan = exp.to_table(read.view(kind)).as_(alias)
                sql = exp.select(key.columns[alias].as_(column)).from_(scan).sql("spark")
            else:
                scope = key.scopes[alias]
                sql = _with_changed(spark, scope, alias, kind, others, reads, registered)
            found.append(spark.sql(sql).toDF(column))
    keys = reduce(DataFrame.unionAll, found)
    aware = [
        table
        for table in references(branch)
        if table.alias_or_name.lower() in key.null_aware and reads[table.name.lower()].changed
    ]
    if aware:
        if _null_keys_changed(spark, key, aware, reads):
            # A NULL among a NOT IN's rows decides every row: all of them are recomputed.
            return now_less_before(spark, branch, reads, names, registered)
        # Whether a NOT IN's subquery has rows at all decides the rows whose key is NULL.
        null = F.lit(None).cast(keys.schema.fields[0].dataType).alias(column)
        keys = keys.unionAll(spark.range(1).select(null))
    touched = Touched.held(keys, hidden(f"join_keys_{index}"))
    restricted = touched.restricted(branch, [(column, key.expression)])
    return now_less_before(spark, restricted, reads, names, registered)


def _decided_otherwise(
    spark: SparkSession,
    parameter: Parameter,
    reads: dict[str, SourceRead],
    registered: set[str],
    name: str,
) -> list[DataFrame]:
    """The keys of the rows (as read now) whose condition decides otherwise with the parameter's
    value now than as last read; none when the value is the same. A row that changed gives its
    key by itself, so the rows as read now are enough."""
    tables = [reads[table.name.lower()] for table in references(parameter.query)]
    if not any(read.changed for read in tables):
        return []
    now = rewrite(parameter.query, lambda _, table: view_or_self(reads, table, "new"))
    then = rewrite(parameter.query, lambda _, name: as_last_read(spark, reads, name, registered))
    values = {}
    for time, sql in (("now", now), ("then", then)):
        frame = spark.sql(sql)
        values[time] = frame.collect()
        view = hidden(f"parameter_{name}_{time}")
        frame.toDF("value").createOrReplaceTempView(view)
    if values["now"] == values["then"]:
        return []
    conditions = []
    for time in ("now", "then"):
        conjunct = parameter.conjunct.copy()
        held = next(s for s in conjunct.find_all(exp.Subquery) if s.this == parameter.query)
        value = exp.select("value").from_(hidden(f"parameter_{name}_{time}"))
        held.replace(exp.Subquery(this=value))
        conditions.append(conjunct)
    same = exp.NullSafeEQ(this=conditions[0], expression=conditions[1])
    rows = parameter.rows.where(exp.not_(same))
    return [spark.sql(rewrite(rows, lambda _, table: view_or_self(reads, table, "new")))]


def _null_keys_changed(
    spark: SparkSession, key: JoinKey, tables: list[exp.Table], reads: dict[str, SourceRead]
) -> bool:
    """Whether a row the change gains or loses in a NOT IN's table has a NULL key."""
    for table in tables:
        alias, read = table.alias_or_name.lower(), reads[table.name.lower()]
        for kind in ("pos", "neg"):
            scan = exp.to_table(read.view(kind)).as_(alias)
            nulls = exp.select("1").from_(scan).where(key.columns[alias].copy().is_(exp.null()))
            if not spark.sql(nulls.sql(dialect="spark")).isEmpty():
                return True
    return False


def _with_changed(
    spark: SparkSession,
    select: exp.Select,
    alias: str,
    kind: str,
    others: str,
    reads: dict[str, SourceRead],
    registered: set[str],
) -> str:
    """`select` with the table under `alias` read from its rows gained or lost (`kind`), and
    every other table as read now (`new`) or as last read (`old`)."""
    refs = [table.alias_or_name.lower() for table in references(select)]

    def relation(index: int, name: str) -> str:
        read = reads[name]
        if refs[index] == alias:
            return read.view(kind)
        if others == "old" and read.changed:
            return view_as_last_read(spark, read, registered)
        return read.view("new")

    return rewrite(select, relation)


def row_changes(
    spark: SparkSession,
    branches: tuple[Branch, ...],
    reads: dict[str, SourceRead],
    names: list[str],
    clustered_by: tuple[str, ...] = (),
) -> DataFrame:
    """The signed rows (`names` + MULT) the branches' result gains and loses, netted; hash
    partitioned by `clustered_by` when given, so that grouping by those needs no more shuffle."""
    combined = signed_rows(spark, branches, reads, names)
    if clustered_by:
        combined = combined.repartition(*map(col, clustered_by))
    return netted(combined, names)
