"""ALTER TABLE t RENAME TO u: a catalog change only. The Delta table keeps its files, versions and
history; its load history and rejected rows move with it, and its streams follow it with their
offsets. Pipes, dynamic tables, tasks and exports name it in their SQL, so the rename is refused
while one does, rather than leave them naming nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.core.results import Result
from lake_assets.tables.alterations import RenameTable
from lake_assets.tables.entry import TableEntry, table_named

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def rename_table(session: Context, stmt: RenameTable) -> Result:
    table_named(
        session.catalog,
        stmt.name,
        "only a table is renamed",
        lambda other: f"create the {other.LABEL} again under the new name, then drop this one",
    )
    session.catalog.rename(TableEntry, stmt.name, stmt.new_name)
    return Result.status(f"renamed table {stmt.name} to {stmt.new_name}")
