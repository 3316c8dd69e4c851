"""How a refresh is run: whether Spark compiles its expressions, from the rows it reads, and why
it recomputes."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import sqlglot

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import Column
from lake_assets.dynamic_tables.choosing import (
    AUTO_MIN_ROWS,
    COMPILED_MIN_ROWS,
    Estimate,
    compiled,
    replaced_views,
    schema_changes,
    why_full,
)
from lake_assets.dynamic_tables.entry import DynamicTableEntry, RefreshModeChoice
from lake_assets.dynamic_tables.lowering import classify
from lake_assets.dynamic_tables.runtime.sources import SourceRead
from lake_assets.tables.entry import TableEntry
from lake_assets.views.entry import ViewEntry

SUMMARY = "SELECT category, COUNT(*) AS n, MIN(dt) AS first FROM sales GROUP BY category"
JOINED = "SELECT s.id, c.region FROM sales s JOIN customers c ON s.customer = c.id"


def test_an_aggregate_of_one_table_reads_its_changes_and_groups_only() -> None:
    plan = classify(sqlglot.parse_one(SUMMARY, read="spark"))
    few_changes = Estimate(changed=5, rows=10 * COMPILED_MIN_ROWS)
    assert not compiled(plan, few_changes, table_rows=20)
    assert compiled(plan, few_changes, table_rows=COMPILED_MIN_ROWS)
    assert compiled(plan, Estimate(changed=COMPILED_MIN_ROWS, rows=0), table_rows=20)


def test_a_join_reads_its_sources_and_no_estimate_compiles() -> None:
    plan = classify(sqlglot.parse_one(JOINED, read="spark"))
    assert compiled(plan, Estimate(changed=5, rows=COMPILED_MIN_ROWS), table_rows=20)
    assert not compiled(plan, Estimate(changed=5, rows=1000), table_rows=20)
    assert compiled(plan, None, table_rows=0)


def auto_reason(estimate: Estimate) -> str | None:
    entry = DynamicTableEntry("d", "/tmp/d", (), JOINED, ("sales", "customers"), ())
    assert entry.refresh_mode is RefreshModeChoice.AUTO
    plan = classify(sqlglot.parse_one(JOINED, read="spark"))
    return why_full(entry, plan, initial=False, untracked=[], reads=[], estimate=estimate)


def test_auto_recomputes_large_sources_when_applying_the_change_reads_as_much() -> None:
    sales, customers = 4 * AUTO_MIN_ROWS, AUTO_MIN_ROWS
    rows = sales + customers
    # Only the sales changed: their change joined with the customers, far less than both.
    assert auto_reason(Estimate(50, rows, ((50, sales),))) is None
    # Both changed: each change joined with the other table whole reads more than recomputing.
    assert auto_reason(Estimate(70, rows, ((50, sales), (20, customers)))) == (
        f"AUTO: applying the changes reads about {rows + 70} rows (each changed source's change "
        f"with the other sources whole), recomputing {rows}: recomputing costs less"
    )
    # Small sources keep applying their changes, a large share recomputes.
    assert auto_reason(Estimate(7, 30, ((5, 20), (2, 10)))) is None
    assert auto_reason(Estimate(rows // 4, rows, ((rows // 4, sales),))).startswith("AUTO: ")


def test_a_source_whose_columns_changed_since_the_last_refresh_is_recomputed_once(
    tmp_path: Path,
) -> None:
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(
        TableEntry(
            "sales", "/tmp/sales", (Column("id", "INT"),),
            schema_version=7, schema_change="added column note STRING",
        )
    )  # fmt: skip
    read = partial(SourceRead, "sales", "/tmp/sales", None, 9, index=0)
    changed = schema_changes(catalog, [read(previous=6)])
    assert changed == ("sales's columns changed at version 7 (added column note STRING)",)
    # the refresh after it read version 7 or later: its changes read as usual
    assert schema_changes(catalog, [read(previous=7)]) == ()
    assert schema_changes(catalog, [read(previous=None)]) == ()
    plan = classify(sqlglot.parse_one(SUMMARY, read="spark"))
    entry = DynamicTableEntry("d", "/tmp/d", (), SUMMARY, ("sales",), plan.hidden)
    reason = why_full(entry, plan, initial=False, untracked=[], reads=[], schema_changes=changed)
    assert reason == f"{changed[0]} since the last refresh"


def test_a_view_replaced_since_the_last_refresh_is_recomputed_once(tmp_path: Path) -> None:
    """Replacing a view renews its created_at: a refresh that started before it read the old
    query (through the view over the view too)."""
    catalog = Catalog(tmp_path / "catalog.db")
    catalog.add(TableEntry("sales", "/tmp/sales", (Column("id", "INT"),)))
    catalog.add(ViewEntry("kept", "SELECT id FROM sales", ("sales",), (), created_at="T10"))
    catalog.add(ViewEntry("top", "SELECT id FROM kept", ("kept",), (), created_at="T05"))
    entry = DynamicTableEntry("d", "/tmp/d", (), "SELECT id FROM top", ("top",))
    assert replaced_views(catalog, entry, "T07") == ("kept",)
    assert replaced_views(catalog, entry, "T11") == ()
    assert replaced_views(catalog, entry, None) == ()  # no refresh yet: the initial one is FULL
    plan = classify(sqlglot.parse_one("SELECT id FROM sales", read="spark"))
    reason = why_full(entry, plan, initial=False, untracked=[], reads=[], views=("kept",))
    assert reason == "view kept was replaced since the last refresh"
