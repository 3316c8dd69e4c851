"""Bind the table names in a Spark SQL statement to the Delta locations the catalog holds."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp

from lake_assets.core.errors import LakeError
from lake_assets.core.names import hidden

# Placeholders for volume files, directory tables and load history (see sql.sources).
SOURCE_PREFIX = hidden("source_")


def _cte_names(expression: exp.Expression) -> set[str]:
    return {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}


def _insert_target(expression: exp.Expression) -> exp.Table | None:
    if not isinstance(expression, exp.Insert):
        return None
    target = expression.this
    return target.this if isinstance(target, exp.Schema) else target


def _table_references(expression: exp.Expression) -> list[exp.Table]:
    ctes = _cte_names(expression)
    references = []
    for table in expression.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue
        if table.db or table.catalog:
            raise LakeError(
                f"'{table.sql(dialect='spark')}' names a schema, and schemas are not supported yet",
                "use the table's bare name: every object lives in one schema",
            )
        if table.name.lower() not in ctes and not table.name.startswith(SOURCE_PREFIX):
            references.append(table)
    return references


def referenced_tables(expression: exp.Expression) -> list[str]:
    """Names of the catalog relations a statement reads or writes, each once."""
    names: list[str] = []
    for table in _table_references(expression):
        if table.name.lower() not in names:
            names.append(table.name.lower())
    return names


def bind_tables(
    expression: exp.Expression,
    locate: Callable[[str], str],
    narrowed: Mapping[str, Sequence[str]] | None = None,
    queries: Mapping[str, str] | None = None,
) -> str:
    """Spark SQL text with each table replaced by delta.`location`, aliased by its own name;
    tables in `narrowed` (dynamic tables with hidden state columns) show only those columns,
    and relations in `queries` (streams) are the subquery given there."""
    bound = expression.copy()
    insert_target = _insert_target(bound)
    for table in _table_references(bound):
        name = table.name.lower()
        alias = exp.TableAlias(this=exp.to_identifier(table.alias or name))
        if name in (queries or {}):
            # Spark syntax sqlglot does not know (CHANGES FROM VERSION …) goes in as text.
            table.set("this", exp.to_identifier(_query_placeholder(name)))
            table.set("alias", alias)
            continue
        table.set("this", exp.to_identifier(locate(name), quoted=True))
        table.set("db", exp.to_identifier("delta"))
        if table is insert_target:
            continue
        columns = (narrowed or {}).get(name)
        if columns is None:
            table.set("alias", alias)
            continue
        table.set("alias", None)
        inner = exp.select(*[exp.column(c, quoted=True) for c in columns]).from_(table.copy())
        table.replace(exp.Subquery(this=inner, alias=alias))
    text = bound.sql(dialect="spark")
    for name, query in (queries or {}).items():
        text = text.replace(_query_placeholder(name), f"({query})")
    return text


def _query_placeholder(name: str) -> str:
    return hidden(f"query_{name}")
