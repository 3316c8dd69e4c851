"""Bind the table names in a Spark SQL statement to the Delta locations the catalog holds."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from sqlglot import exp
from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.core.names import HIDDEN_PREFIX, hidden
from lake_assets.sql.tokens import tokenize

# Placeholders for volume files, directory tables and load history (see sql.sources).
SOURCE_PREFIX = hidden("source_")
# Spark's data sources that `format.`path`` reads directly, bypassing volumes.
FILE_FORMATS = frozenset(
    {"csv", "json", "parquet", "orc", "text", "avro", "delta", "binaryfile", "xml", "hive"}
)
# Functions that reach files, the JVM or names binding never sees: read_files, Java reflection
# (System.getenv, …), and IDENTIFIER(…), which names a relation or function from a string.
_OUTSIDE_FUNCTIONS = frozenset(
    {"read_files", "reflect", "java_method", "try_reflect", "identifier"}
)
_THROUGH_VOLUMES = "read files through a volume: SELECT … FROM VOLUME v"


def check_user_sql(expression: exp.Expr, placeholders: Collection[str]) -> None:
    """Refuse what in a user's Spark SQL would go around the catalog and volumes: a relation
    addressed by path (csv.`/etc/passwd`), a directory written directly, a script or JVM call,
    and a hidden name that is not one of the statement's own placeholders."""
    for node in expression.walk():
        match node:
            case exp.Table() if node.db or node.catalog:
                if node.db.lower() in FILE_FORMATS or "/" in node.name or ":" in node.name:
                    raise LakeError(
                        f"'{node.db}.`{node.name}`' reads files directly", _THROUGH_VOLUMES
                    )
            case exp.Table() if node.name.lower().startswith(HIDDEN_PREFIX):
                if node.name not in placeholders:
                    raise LakeError(
                        f"'{node.name}' is a name the lakehouse keeps for itself",
                        "name a table, dynamic table or stream of the catalog",
                    )
            case exp.Directory():
                raise LakeError(
                    "INSERT OVERWRITE DIRECTORY writes files directly",
                    "write files through a volume: COPY INTO VOLUME v …",
                )
            case exp.QueryTransform():
                raise LakeError(
                    "SELECT TRANSFORM … USING runs a script, which user SQL may not",
                    "compute the column with SQL functions",
                )
            case exp.Anonymous() if node.name.lower() in _OUTSIDE_FUNCTIONS:
                raise LakeError(
                    f"{node.name}(…) reaches outside the catalog, which user SQL may not",
                    _THROUGH_VOLUMES
                    if node.name.lower() == "read_files"
                    else "name the table or function itself, and use SQL functions only",
                )


def _cte_names(expression: exp.Expr) -> set[str]:
    return {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}


def _insert_target(expression: exp.Expr) -> exp.Table | None:
    if not isinstance(expression, exp.Insert):
        return None
    target = expression.this
    return target.this if isinstance(target, exp.Schema) else target


def table_references(expression: exp.Expr) -> list[exp.Table]:
    """The catalog relations a statement names, in order: not its CTEs, not placeholders."""
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


def referenced_tables(expression: exp.Expr) -> list[str]:
    """Names of the catalog relations a statement reads or writes, each once."""
    names: list[str] = []
    for table in table_references(expression):
        if table.name.lower() not in names:
            names.append(table.name.lower())
    return names


def bind_tables(
    expression: exp.Expr,
    locate: Callable[[str], str],
    narrowed: Mapping[str, Sequence[str]] | None = None,
    queries: Mapping[str, str] | None = None,
) -> str:
    """Spark SQL text with each table replaced by delta.`location`, aliased by its own name;
    tables in `narrowed` (dynamic tables with hidden state columns) show only those columns,
    and relations in `queries` (streams) are the subquery given there."""
    bound = expression.copy()
    insert_target = _insert_target(bound)
    for table in table_references(bound):
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
    return _substituted(
        bound.sql(dialect="spark"),
        {_query_placeholder(name): f"({query})" for name, query in (queries or {}).items()},
    )


def _substituted(text: str, replacements: Mapping[str, str]) -> str:
    """`text` with each name token in `replacements` replaced; string literals and comments
    are other tokens (or none), so they stay verbatim."""
    pieces: list[str] = []
    copied = 0
    for token in tokenize(text):
        if token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) and token.text in replacements:
            pieces.append(text[copied : token.start] + replacements[token.text])
            copied = token.end + 1
    pieces.append(text[copied:])
    return "".join(pieces)


def _query_placeholder(name: str) -> str:
    return hidden(f"query_{name}")
