"""Which rule a SELECT's rows change by (see branch), decided once as the query is lowered, and
the rows a set of branches gains and loses, signed and netted."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from sqlglot import exp

from lake_assets.dynamic_tables.analyses.keys import join_key, key_of
from lake_assets.dynamic_tables.analyses.shapes import by_join_key, derived_table
from lake_assets.dynamic_tables.operators.branch import Branch
from lake_assets.dynamic_tables.operators.derived_key import DerivedKey
from lake_assets.dynamic_tables.operators.inner_join import InnerJoin
from lake_assets.dynamic_tables.operators.keyed_join import KeyedJoin
from lake_assets.dynamic_tables.runtime.netting import col, netted
from lake_assets.dynamic_tables.runtime.queries import key_rows
from lake_assets.dynamic_tables.runtime.sources import Changes


def branch(select: exp.Select) -> Branch:
    """The rule a SELECT's rows change by (see the classes above)."""
    derived = derived_table(select)
    if derived is not None and isinstance(derived.this, exp.Select):
        keys = key_of(derived.this) or []
        touched = branch(key_rows(derived.this, keys))
        return DerivedKey(select, derived, tuple(keys), touched)
    key = join_key(select) if by_join_key(select) else None
    return KeyedJoin(select, key) if key is not None else InnerJoin(select)


def signed_rows(changes: Changes, branches: tuple[Branch, ...], names: list[str]) -> DataFrame:
    """The rows (`names` + MULT) the branches' result gains (+1) and loses (-1), one part per
    changed reference (the delta rule), not netted."""
    parts = [
        part
        for index, each in enumerate(branches)
        for part in each.signed_rows(changes, names, index)
    ]
    return reduce(DataFrame.unionAll, parts)


def row_changes(
    changes: Changes,
    branches: tuple[Branch, ...],
    names: list[str],
    clustered_by: tuple[str, ...] = (),
) -> DataFrame:
    """The signed rows (`names` + MULT) the branches' result gains and loses, netted; hash
    partitioned by `clustered_by` when given, so that grouping by those needs no more shuffle."""
    combined = signed_rows(changes, branches, names)
    if clustered_by:
        combined = combined.repartition(*map(col, clustered_by))
    return netted(combined, names)
