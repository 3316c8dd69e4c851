"""Storage connections: catalog work only, secrets sealed on the way in and never shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.connections.grammar import CreateConnection
from lake_assets.core.entries import now_utc
from lake_assets.core.lifecycle import name_taken
from lake_assets.core.results import Result
from lake_assets.sql.secrets import hidden
from lake_assets.sql.statements import DescribeObject
from resources.secrets import seal, shown
from resources.volumes import endpoint_url

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def create_connection(session: Context, stmt: CreateConnection) -> Result:
    """Refuses, before anything is stored, an endpoint or an `env:` variable the operator did
    not allow; using the connection checks them again (resources.volumes, resources.secrets)."""
    catalog, lake_home = session.catalog, session.settings.lake_home
    if taken := name_taken(session, ConnectionEntry, stmt.name, stmt.if_not_exists):
        return taken
    endpoint_url(stmt.name, stmt.endpoint)
    catalog.add(
        ConnectionEntry(
            name=stmt.name,
            created_at=now_utc(),
            type=stmt.type,
            endpoint=stmt.endpoint,
            access_id=seal(stmt.access_id, lake_home),
            access_key=seal(stmt.access_key, lake_home),
            region=stmt.region,
            role_arn=stmt.role_arn,
        )
    )
    return Result.status(f"created storage connection {stmt.name}")


def shown_endpoint(endpoint: str | None) -> str | None:
    """An endpoint as shown: one stored before endpoints with user info were refused shows none."""
    return None if endpoint is None else hidden(endpoint, endpoint)


def describe_connection(session: Context, stmt: DescribeObject) -> Result:
    entry = session.catalog.get(ConnectionEntry, stmt.name)
    return Result.properties(
        name=entry.name,
        type=entry.type,
        endpoint=shown_endpoint(entry.endpoint),
        access_id=shown(entry.access_id),
        access_key=shown(entry.access_key),
        region=entry.region,
        role_arn=entry.role_arn,
        created_at=entry.created_at,
    )


def show_connections(session: Context) -> Result:
    return Result(
        ["name", "type", "endpoint", "created_at"],
        [
            (c.name, c.type, shown_endpoint(c.endpoint), c.created_at)
            for c in session.catalog.entries(ConnectionEntry)
        ],
    )
