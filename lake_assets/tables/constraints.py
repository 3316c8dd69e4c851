"""ALTER TABLE t ADD | DROP CONSTRAINT: a table's expectations change in the catalog only (no
Delta commit). A new expectation judges the writes from then on: the rows already in the table
are left as they are, and counted, so that the statement says how many would fail it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.tables.columns import recorded_schema
from lake_assets.tables.enforcing import check_conditions
from lake_assets.tables.entry import TableEntry, table_named
from lake_assets.tables.expectations import declared_expectations
from lake_assets.tables.grammar import AddExpectation, DropExpectation

if TYPE_CHECKING:
    from lake_assets.core.kind import Context


def add_expectation(session: Context, stmt: AddExpectation) -> Result:
    catalog, name = session.catalog, stmt.name
    entry = recorded_schema(catalog, _table(session, name))
    expectations = declared_expectations(
        f"table {name}", entry.columns, (*entry.expectations, stmt.expectation)
    )
    added = expectations[-1]
    rows = session.spark.read.format("delta").load(entry.location)
    check_conditions(f"table {name}", rows, (added,))
    existing = rows.where(F.expr(f"NOT {added.passes}")).count()
    catalog.update(TableEntry, name, lambda found: replace(found, expectations=expectations))
    return Result.status(
        f"table {name} expects {added.name}: {added.declaration()}, on writes from now on; "
        f"{existing} rows already in it fail it and are left as they are"
    )


def drop_expectation(session: Context, stmt: DropExpectation) -> Result:
    name, dropped = stmt.name, stmt.expectation.lower()
    entry = _table(session, name)
    kept = tuple(e for e in entry.expectations if e.name.lower() != dropped)
    if len(kept) == len(entry.expectations):
        known = ", ".join(e.name for e in entry.expectations) or "none"
        raise LakeError(
            f"table {name} has no expectation {stmt.expectation}",
            f"choose among its expectations (DESC TABLE {name} shows them): {known}",
        )
    session.catalog.update(TableEntry, name, lambda found: replace(found, expectations=kept))
    return Result.status(f"table {name} no longer expects {stmt.expectation}")


def _table(session: Context, name: str) -> TableEntry:
    return table_named(
        session.catalog,
        name,
        "only a table has expectations",
        lambda other: "declare them on a table: ALTER TABLE t ADD CONSTRAINT name EXPECT (…)",
    )
