"""CREATE [OR REPLACE] VIEW, SHOW VIEWS, DESC VIEW and DROP VIEW. CREATE binds the query and has
Spark analyse it (no job runs), so that a view over an unknown column fails there, and records the
columns it resolves; the rest only read and write the catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.core.catalog import CatalogView
from lake_assets.core.entries import RELATION, Column
from lake_assets.core.errors import LakeError
from lake_assets.core.lifecycle import drop_object, name_taken
from lake_assets.core.names import refuse_repeated_columns
from lake_assets.core.results import Result
from lake_assets.core.spark_errors import as_lake_error
from lake_assets.sql.binding import referenced_tables
from lake_assets.sql.statements import DescribeObject
from lake_assets.sql.types import type_text
from lake_assets.streams.entry import StreamEntry
from lake_assets.views.entry import ViewEntry
from lake_assets.views.grammar import CreateView
from lake_assets.views.reading import refuse_cycle

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

_READ_INSTEAD = "read the relations it stands for instead of the view"


def create_view(session: Context, stmt: CreateView) -> Result:
    catalog = session.catalog
    if not stmt.or_replace and (
        taken := name_taken(session, ViewEntry, stmt.name, stmt.if_not_exists)
    ):
        return taken
    sources = tuple(referenced_tables(stmt.query.expression))
    relations = {name: catalog.relation(name) for name in sources}
    _refuse_streams(stmt.name, [n for n, r in relations.items() if isinstance(r, StreamEntry)])
    refuse_cycle("view", stmt.name, sources, catalog.find_relation, _READ_INSTEAD)  # before Spark
    bound = session.bind(stmt.query)
    try:
        schema = session.spark.sql(bound.sql).schema  # Spark's analysis: no job runs
    except Exception as error:
        failure = as_lake_error(error, catalog.relation_locations())
        raise LakeError(f"view {stmt.name} was not created: {failure.what}", failure.fix) from error
    columns = tuple(Column(field.name, type_text(field.dataType)) for field in schema.fields)
    refuse_repeated_columns(f"view {stmt.name}", [column.name for column in columns])
    entry = ViewEntry(stmt.name, stmt.query_text, sources, columns, stmt.comment)

    def check(view: CatalogView) -> None:
        refuse_cycle(
            "view", stmt.name, sources, lambda name: view.find_in(RELATION, name), _READ_INSTEAD
        )
        _keeps_columns(view, entry)

    if stmt.or_replace and catalog.replace(entry, check) is not None:
        return Result.status(f"replaced view {stmt.name}")
    if not stmt.or_replace:
        catalog.add(entry, check)
    return Result.status(f"created view {stmt.name}")


def _refuse_streams(name: str, streams: list[str]) -> None:
    """A stream is consumed by the statement that reads it: a view would hide that."""
    if streams:
        raise LakeError(
            f"view {name} cannot read stream {streams[0]}: a stream is consumed by the statement "
            "that reads it, and a view would hide which statement that is",
            f"read {streams[0]} in the statement or task that consumes it "
            f"(INSERT INTO … SELECT … FROM {streams[0]})",
        )


def _keeps_columns(view: CatalogView, entry: ViewEntry) -> None:
    """OR REPLACE keeps a view's columns while other objects read it: what they recorded of it
    (a view's columns, a dynamic table's) would no longer hold."""
    old = view.find_in(RELATION, entry.name)
    if not isinstance(old, ViewEntry) or old.columns == entry.columns:
        return
    users = view.users_of(ViewEntry, entry.name)
    if users:
        shown = ", ".join(f"{c.name} {c.type}" for c in old.columns)
        raise LakeError(
            f"view {entry.name} is read by {users[0]}, so OR REPLACE must keep its columns "
            f"({shown})",
            f"return the same columns and types, or drop {users[0]} first",
        )


def show_views(session: Context) -> Result:
    return Result(
        ["name", "created_at", "comment", "query"],
        [(e.name, e.created_at, e.comment, e.query) for e in session.catalog.entries(ViewEntry)],
    )


def describe_view(session: Context, stmt: DescribeObject) -> Result:
    """As DESC DYNAMIC TABLE: properties, so that every output format shows the query too."""
    entry = session.catalog.get(ViewEntry, stmt.name)
    return Result.properties(
        name=entry.name,
        query=entry.query,
        sources=", ".join(entry.sources),
        columns=", ".join(f"{c.name} {c.type}" for c in entry.columns),
        comment=entry.comment,
        created_at=entry.created_at,
    )


drop_view = drop_object(ViewEntry)
