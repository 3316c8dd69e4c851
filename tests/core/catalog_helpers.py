"""Catalog entries as the catalog's tests add them, in this process and in worker processes."""

from __future__ import annotations

from typing import Any

from lake_assets.core.entries import Column
from lake_assets.tables.entry import TableEntry

COLUMNS = (Column("id", "BIGINT", "Order ID"), Column("amount", "DECIMAL(10,2)"))


def entry(name: str, **changes: Any) -> TableEntry:
    fields: dict[str, Any] = {"location": f"/warehouse/{name}-abc", "columns": COLUMNS, **changes}
    return TableEntry(name=name, **fields)
