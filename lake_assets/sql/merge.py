"""Give MERGE the meaning our dialect promises before Spark and Delta run it."""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from lake_assets.core.errors import LakeError

# Functions whose value differs between two evaluations, so a filter cannot repeat a clause's test.
_NONDETERMINISTIC = (exp.Rand, exp.Randn, exp.Randstr, exp.Uuid)
# Conditions to leave to the clause: a subquery's columns may name its own tables, not the source.
_UNSAFE = (*_NONDETERMINISTIC, exp.Query)


def standard_merge(merge: exp.Merge, target_columns: Sequence[str]) -> exp.Merge:
    """A copy of `merge` that Spark accepts and Delta runs with the standard MERGE meaning."""
    rewritten = merge.copy()
    for when in _whens(rewritten):
        _fill_insert_columns(rewritten, when, target_columns)
    _drop_idle_source_rows(rewritten)
    return rewritten


def _whens(merge: exp.Merge) -> list[exp.When]:
    """The WHEN clauses, which sqlglot keeps inside one Whens node."""
    whens = merge.args.get("whens")
    return list(whens.expressions) if isinstance(whens, exp.Whens) else []


def _target_name(merge: exp.Merge) -> str:
    """The target's name as the user wrote it, for errors that point at the statement."""
    target = merge.this
    return exp.table_name(target) if isinstance(target, exp.Table) else target.sql("spark")


def _fill_insert_columns(merge: exp.Merge, when: exp.When, target_columns: Sequence[str]) -> None:
    """Spark SQL needs INSERT (cols) VALUES; our dialect lets VALUES alone mean every column."""
    insert = when.args.get("then")
    if not isinstance(insert, exp.Insert) or insert.this is not None:
        return
    values = insert.expression
    if not isinstance(values, exp.Tuple):
        return
    if len(values.expressions) != len(target_columns):
        table = _target_name(merge)
        raise LakeError(
            f"INSERT VALUES in MERGE INTO {table} gives {len(values.expressions)} values "
            f"for {len(target_columns)} columns ({', '.join(target_columns)})",
            f"list one value per column of {table}, or name the columns: "
            "INSERT (col, …) VALUES (…)",
        )
    insert.set("this", exp.Tuple(expressions=[exp.column(name) for name in target_columns]))


def _source_alias(source: exp.Expr) -> str | None:
    """The name ON and WHEN use for the source, or None when a rename could break a reference."""
    if source.alias:
        return source.alias
    if isinstance(source, exp.Table) and not source.db and not source.catalog:
        return source.name
    return None


def _source_only(condition: exp.Expr, alias: str) -> bool:
    """Whether the condition reads only the source row, so it can be tested before matching."""
    if condition.find(*_UNSAFE):
        return False
    return all(
        column.table.lower() == alias.lower() and not column.args.get("db")
        for column in condition.find_all(exp.Column)
    )


def _keep_condition(whens: list[exp.When], alias: str) -> exp.Expr | None:
    """The test a source row passes when some clause might act on it; None when every row might."""
    conditions = []
    for when in whens:
        condition = when.args.get("condition")
        if condition is None or not _source_only(condition, alias):
            return None
        conditions.append(condition.copy())
    return exp.or_(*conditions) if conditions else None


def _drop_idle_source_rows(merge: exp.Merge) -> None:
    """Delta counts source rows per target row by ON alone; rows no clause can act on must go."""
    whens = _whens(merge)
    if any(when.args.get("source") for when in whens):
        return
    source = merge.args.get("using")
    if source is None:
        return
    alias = _source_alias(source)
    if alias is None:
        return
    keep = _keep_condition(whens, alias)
    if keep is None:
        return
    inner = source.copy()
    if not inner.alias:
        inner = exp.alias_(inner, alias, table=True)
    merge.set("using", exp.select("*").from_(inner).where(keep).subquery(alias))
