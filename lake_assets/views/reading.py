"""What reading a view means where a query is analysed rather than bound (a dynamic table's
refresh): its query in its place, and the relations with data that it reads in the end. Spark-free:
the catalog is asked through `find`, which a transaction's view of it may answer too."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlglot import exp

from lake_assets.core.entries import RELATION, CatalogObject
from lake_assets.core.errors import LakeError
from lake_assets.sql.binding import table_references
from lake_assets.sql.grammar import Grammar
from lake_assets.sql.statements import Query
from lake_assets.views.entry import ViewEntry

# The relation called a name, or None (Catalog.find_relation, or a transaction's find_in).
Find = Callable[[str], CatalogObject | None]


def view_query(entry: ViewEntry) -> exp.Expr:
    """The view's query as written (checked as user SQL when parsed, as at CREATE)."""
    statement = Grammar().spark(entry.query)
    assert isinstance(statement, Query), "CREATE VIEW kept a SELECT"
    return statement.expression


def inline_views(expression: exp.Expr, find: Find) -> exp.Expr:
    """`expression` with each view it names replaced by the view's query as a subquery, aliased
    as the view was read (its name, or its alias), the views in that query inlined too."""
    inlined = expression.copy()
    for table in table_references(inlined):
        found = find(table.name.lower())
        if isinstance(found, ViewEntry):
            alias = exp.TableAlias(this=exp.to_identifier(table.alias or found.name))
            query = inline_views(view_query(found), find)
            table.replace(exp.Subquery(this=query, alias=alias))
    return inlined


def base_relations(names: Iterable[str], find: Find) -> tuple[str, ...]:
    """The relations with data of their own that `names` read, each view replaced by what it
    reads, in order, each once."""
    found: list[str] = []
    for name in names:
        entry = find(name)
        read = base_relations(entry.sources, find) if isinstance(entry, ViewEntry) else (name,)
        found.extend(each for each in read if each not in found)
    return tuple(found)


def views_read(names: Iterable[str], find: Find) -> list[ViewEntry]:
    """The views `names` read, directly or through other views, each once."""
    views: list[ViewEntry] = []
    for name in names:
        entry = find(name)
        if isinstance(entry, ViewEntry) and entry not in views:
            views.append(entry)
            views.extend(v for v in views_read(entry.sources, find) if v not in views)
    return views


def relations_named(entry: CatalogObject) -> tuple[str, ...]:
    """The relations an object reads by name (a view's or a dynamic table's sources)."""
    names: list[str] = []
    for field_name, namespace in entry.REFERENCES.items():
        value = getattr(entry, field_name) if namespace == RELATION else None
        names.extend((value,) if isinstance(value, str) else value or ())
    return tuple(names)


def refuse_cycle(what: str, name: str, sources: Iterable[str], find: Find, fix: str) -> None:
    """A relation (`what` says its kind) may not read itself, directly or through the views and
    dynamic tables it reads."""
    path = _path_to(name, sources, find, [name])
    if path is not None:
        raise LakeError(f"{what} {name} would read itself: {' → '.join(path)}", fix)


def _path_to(target: str, sources: Iterable[str], find: Find, path: list[str]) -> list[str] | None:
    """A way from `sources` back to `target` through what each relation reads, or None."""
    for source in sources:
        if source == target:
            return [*path, source]
        entry = find(source) if source not in path else None
        if entry is not None:
            found = _path_to(target, relations_named(entry), find, [*path, source])
            if found is not None:
                return found
    return None
