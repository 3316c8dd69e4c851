"""Outer, semi and anti joins and subqueries tied to a key (see keys.join_key): the rows of one
key value come from source rows of that value, so the change is the branch's rows of the keys
the changed rows reach (and of the rows whose condition a parameter now decides otherwise),
now less as last read."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from lake_assets.core.names import hidden
from lake_assets.dynamic_tables.analyses.keys import JoinKey, Parameter
from lake_assets.dynamic_tables.analyses.shapes import outer_join
from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.runtime.by_key import Touched, now_less_before
from lake_assets.dynamic_tables.runtime.pruning import RESTRICT_MIN_ROWS, ranges, restricted
from lake_assets.dynamic_tables.runtime.queries import read_where, references, rewrite
from lake_assets.dynamic_tables.runtime.sources import Changes

_BY_JOIN_KEY = (
    "the rows of the join keys the changed source rows hold (each from its own column), "
    "now less as last read; a table of "
    f"{RESTRICT_MIN_ROWS:,} rows or more is read only where its key column lies in the "
    "ranges of those keys"
)


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

    def join_keys(self) -> dict[str, tuple[str, ...]]:
        return {
            table.name.lower(): (column.name,)
            for table, column in _key_columns(self.select, self.key)
        }

    def signed_rows(self, changes: Changes, names: list[str], index: int) -> list[DataFrame]:
        return _by_join_key(changes, self.select, self.key, names, index)


def _by_join_key(
    changes: Changes, branch: exp.Select, key: JoinKey, names: list[str], index: int
) -> list[DataFrame]:
    """Outer, semi and anti joins and subqueries: the rows of one key value come from source
    rows of that value (and the rows inner-joined to those), so the change is the branch's rows
    of the keys the changed rows reach, now (+1) less as last read (-1)."""
    column = hidden("join_key")
    found = [
        keys.toDF(column)
        for number, parameter in enumerate(key.parameters)
        for keys in _decided_otherwise(changes, parameter, f"{index}_{number}")
    ]
    parameters = {alias for parameter in key.parameters for alias in parameter.aliases}
    for table in references(branch):
        read = changes.reads[table.name.lower()]
        alias = table.alias_or_name.lower()
        if not read.changed or alias in parameters:
            continue
        for kind, others in (("pos", "new"), ("neg", "old")):
            if alias in key.columns:
                scan = exp.to_table(read.view(kind)).as_(alias)
                sql = exp.select(key.columns[alias].as_(column)).from_(scan).sql("spark")
            else:
                scope = key.scopes[alias]
                sql = _with_changed(changes, scope, alias, kind, others)
            found.append(changes.spark.sql(sql).toDF(column))
    keys = reduce(DataFrame.unionAll, found)
    aware = [
        table
        for table in references(branch)
        if table.alias_or_name.lower() in key.null_aware
        and changes.reads[table.name.lower()].changed
    ]
    if aware:
        if _null_keys_changed(changes, key, aware):
            # A NULL among a NOT IN's rows decides every row: all of them are recomputed.
            return now_less_before(changes, branch, names)
        # Whether a NOT IN's subquery has rows at all decides the rows whose key is NULL.
        null = F.lit(None).cast(keys.schema.fields[0].dataType).alias(column)
        keys = keys.unionAll(changes.spark.range(1).select(null))
    touched = Touched.held(keys, hidden(f"join_keys_{index}"))
    limited = touched.restricted(branch, [(column, key.expression)])
    return now_less_before(changes, _in_key_ranges(changes, limited, touched, key), names)


def _key_columns(select: exp.Select, key: JoinKey) -> list[tuple[exp.Table, exp.Column]]:
    """The tables whose rows of one key value are found by their own key column: every keyed
    table but a NOT IN's (one of its rows with a NULL key decides every row)."""
    return [
        (table, key.columns[alias])
        for table in references(select)
        if (alias := table.alias_or_name.lower()) in key.columns and alias not in key.null_aware
    ]


def _in_key_ranges(changes: Changes, query: exp.Expr, touched: Touched, key: JoinKey) -> exp.Expr:
    """`query` with each large keyed table read only where its key column lies in the ranges of
    the touched keys, so that Delta skips its files by their statistics: a row of another key
    makes only rows of that key, which the query does not keep."""
    assert isinstance(query, exp.Select), "a keyed query is one SELECT"
    large = [
        (table, column)
        for table, column in _key_columns(query, key)
        if restricted(changes.reads[table.name.lower()].rows)
    ]
    (field,) = touched.frame.schema.fields
    found = ranges(touched.frame, [field]) if large else None
    if found is None or not found.bounds:
        return query
    for table, column in large:
        schema = changes.spark.table(changes.reads[table.name.lower()].view("new")).schema
        held = {f.name.lower(): f for f in schema}.get(column.name.lower())
        if held is not None and held.dataType == field.dataType:
            alias = table.alias_or_name.lower()
            query = read_where(query, alias, replace(found, column=held.name).sql(alias))
    return query


def _decided_otherwise(changes: Changes, parameter: Parameter, name: str) -> list[DataFrame]:
    """The keys of the rows (as read now) whose condition decides otherwise with the parameter's
    value now than as last read; none when the value is the same. A row that changed gives its
    key by itself, so the rows as read now are enough."""
    tables = [changes.reads[table.name.lower()] for table in references(parameter.query)]
    if not any(read.changed for read in tables):
        return []
    now = rewrite(parameter.query, lambda _, table: changes.now(table))
    then = rewrite(parameter.query, lambda _, table: changes.before(table))
    values = {}
    for time, sql in (("now", now), ("then", then)):
        frame = changes.spark.sql(sql)
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
    return [changes.spark.sql(rewrite(rows, lambda _, table: changes.now(table)))]


def _null_keys_changed(changes: Changes, key: JoinKey, tables: list[exp.Table]) -> bool:
    """Whether a row the change gains or loses in a NOT IN's table has a NULL key."""
    for table in tables:
        alias, read = table.alias_or_name.lower(), changes.reads[table.name.lower()]
        for kind in ("pos", "neg"):
            scan = exp.to_table(read.view(kind)).as_(alias)
            nulls = exp.select("1").from_(scan).where(key.columns[alias].copy().is_(exp.null()))
            if not changes.spark.sql(nulls.sql(dialect="spark")).isEmpty():
                return True
    return False


def _with_changed(changes: Changes, select: exp.Select, alias: str, kind: str, others: str) -> str:
    """`select` with the table under `alias` read from its rows gained or lost (`kind`), and
    every other table as read now (`new`) or as last read (`old`)."""
    refs = [table.alias_or_name.lower() for table in references(select)]

    def relation(index: int, name: str) -> str:
        read = changes.reads[name]
        if refs[index] == alias:
            return read.view(kind)
        if others == "old" and read.changed:
            return changes.last_read(read)
        return read.view("new")

    return rewrite(select, relation)
