"""Graphs of dynamic tables refreshed to one snapshot: a diamond (src → a, src → b, c = a ⋈ b) and
a chain over it (d = c ⋈ dim). After any interleaving of source commits and refreshes (by hand or
by the automation, upstream tables suspended and resumed), every dynamic table holds its query
run over the base tables at exactly the versions its last refresh records."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.delta import delta_ref, latest_version
from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables import refresh as dynamic
from lake_assets.dynamic_tables.entry import DynamicTableEntry
from lake_assets.dynamic_tables.refreshes import RefreshState, RefreshTrigger
from lake_assets.dynamic_tables.snapshots import reflected
from lake_assets.session import LakeSession
from tests.dynamic_tables.histories import DIM_CHANGE, SETTINGS, SRC_CHANGE, Sources
from tests.dynamic_tables.refresh_helpers import history_of, rows

# Each dynamic table's query over its base tables (`{src}`, `{dim}`): what it must hold.
A = "SELECT id, cat, amount FROM {src} WHERE qty > 0"
B = "SELECT cat, SUM(amount) AS total, COUNT(*) AS n FROM {src} GROUP BY cat"
C = "SELECT a.id, a.amount, b.total FROM ({a}) a JOIN ({b}) b ON a.cat = b.cat"
D = "SELECT c.id, c.total, x.label FROM ({c}) c JOIN {dim} x ON c.id % 3 = x.weight"
EXPANDED = {
    "a": A,
    "b": B,
    "c": C.format(a=A, b=B, src="{src}"),
    "d": D.format(c=C.format(a=A, b=B, src="{src}"), src="{src}", dim="{dim}"),
}
CREATE = {
    "a": A.format(src="src"),
    "b": B.format(src="src"),
    "c": C.format(a="SELECT * FROM a", b="SELECT * FROM b"),
    "d": D.format(c="SELECT * FROM c", dim="dim"),
}
BASES = {"a": {"src"}, "b": {"src"}, "c": {"src"}, "d": {"src", "dim"}}

TRIGGERS = st.sampled_from([RefreshTrigger.MANUAL, RefreshTrigger.UPSTREAM])
ACTIONS = st.lists(
    st.one_of(
        st.one_of(SRC_CHANGE, DIM_CHANGE).map(lambda change: ("change", change)),
        st.tuples(st.sampled_from(list(CREATE)), TRIGGERS).map(lambda r: ("refresh", r)),
        st.sampled_from(["a", "b"]).map(lambda name: ("toggle", name)),
    ),
    min_size=1,
    max_size=6,
)
ROWS = [("a", 1, 5, "x"), ("b", 2, 1, "y"), ("a", 3, 2, None)]


def check(spark: SparkSession, lake: LakeSession) -> None:
    """Each dynamic table holds its query over the base versions its last refresh records."""
    parts = []
    for name, query in EXPANDED.items():
        entry = lake.catalog.get(DynamicTableEntry, name)
        bases = reflected(spark, entry.location, latest_version(spark, entry.location))
        assert set(bases) == BASES[name], (name, bases)
        views = {}
        for base, read in bases.items():
            view = f"{base}_for_{name}"
            spark.read.format("delta").option("versionAsOf", read.version).load(
                read.location
            ).createOrReplaceTempView(view)
            views[base] = view
        visible = ", ".join(column.name for column in entry.columns)
        expected = query.format(src=views["src"], dim=views.get("dim", "dim"))
        parts += [
            f"SELECT '{name}' AS dt, true AS held, to_json(struct({visible})) AS row "
            f"FROM {delta_ref(entry.location)}",
            f"SELECT '{name}' AS dt, false AS held, to_json(struct(*)) AS row FROM ({expected}) q",
        ]
    found = {name: (Counter(), Counter()) for name in EXPANDED}
    for name, held, row in spark.sql(" UNION ALL ".join(parts)).collect():
        found[name][0 if held else 1][row] += 1
    for name, (held, expected) in found.items():
        assert held == expected, name


def act(spark: SparkSession, lake: LakeSession, sources: Sources, action: tuple) -> None:
    kind, detail = action
    if kind == "change":
        sources.apply(detail)
        return
    if kind == "toggle":
        suspended = lake.catalog.get(DynamicTableEntry, detail).suspended
        lake.sql(f"ALTER DYNAMIC TABLE {detail} {'RESUME' if suspended else 'SUSPEND'}")
        return
    name, trigger = detail
    failure = None
    try:
        outcome = dynamic.refresh(spark, lake.catalog, name, trigger)
    except LakeError as error:  # a suspended table it reads does not reflect the newest snapshot
        failure = error
    if failure is not None:
        assert trigger is RefreshTrigger.MANUAL, failure
        assert "is suspended" in failure.what, failure
    elif outcome.state is RefreshState.SKIPPED:
        assert trigger is RefreshTrigger.UPSTREAM
        assert "suspended" in str(outcome.reason)


@SETTINGS
@given(actions=ACTIONS)
@example(
    actions=[
        ("change", ("update", (1, None, 3))),
        ("refresh", ("a", RefreshTrigger.MANUAL)),
        ("refresh", ("c", RefreshTrigger.MANUAL)),
        ("toggle", "b"),
        ("change", ("insert", [("b", 4, 1, "x")])),
        ("refresh", ("d", RefreshTrigger.UPSTREAM)),
        ("refresh", ("d", RefreshTrigger.MANUAL)),
        ("toggle", "b"),
        ("change", ("dim_insert", [("a", "L9", 1)])),
        ("refresh", ("d", RefreshTrigger.UPSTREAM)),
    ]
)
def test_every_refresh_reflects_one_version_of_each_base_table(spark, actions):
    with tempfile.TemporaryDirectory() as home:
        config = LakeSettings(lake_home=Path(home))
        lake = LakeSession(Catalog(config.catalog_path), config, lambda: spark)
        sources = Sources(lake)
        sources.insert(ROWS)
        lake.sql("INSERT INTO dim VALUES ('a', 'L1', 1), ('b', 'L2', 2), (NULL, 'L0', 0)")
        for name, query in CREATE.items():
            lake.sql(f"CREATE DYNAMIC TABLE {name} AS {query}")
        for action in actions:
            act(spark, lake, sources, action)
            if action[0] == "refresh":
                check(spark, lake)


def test_a_refresh_of_a_diamond_refreshes_the_side_behind_first(lake: LakeSession) -> None:
    """After UPDATE src, REFRESH a, REFRESH c: c joins a's new value with b's new one (b
    refreshed first, DOWNSTREAM), never with b's old one; both record the same version of src."""
    lake.sql(
        "CREATE TABLE src (k STRING, v INT); INSERT INTO src VALUES ('x', 1);"
        "CREATE DYNAMIC TABLE a AS SELECT k, v FROM src;"
        "CREATE DYNAMIC TABLE b AS SELECT k, v * 10 AS w FROM src;"
        "CREATE DYNAMIC TABLE c AS SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k;"
        "UPDATE src SET v = 2; REFRESH DYNAMIC TABLE a"
    )
    (refreshed,) = lake.sql("REFRESH DYNAMIC TABLE c")
    assert refreshed.message.startswith("REFRESH INCREMENTAL"), refreshed.message
    assert rows(lake, "SELECT k, v, w FROM c") == [("x", 2, 20)]
    (b_first, *_) = history_of(lake, "b")
    assert (b_first["refresh_trigger"], b_first["base_tables"]) == ("DOWNSTREAM", "src@3")
    (c_refresh, *_) = history_of(lake, "c")
    assert c_refresh["base_tables"] == "src@3"
    assert c_refresh["source_tables"] == f"a@{_version(lake, 'a')}, b@{_version(lake, 'b')}"
    (desc,) = lake.sql("DESC DYNAMIC TABLE c")
    assert dict(desc.rows)["base_tables"] == "src@3"


def test_a_suspended_table_behind_the_snapshot_stops_a_refresh_downstream(
    spark: SparkSession, lake: LakeSession
) -> None:
    """By hand: one line saying which table and how to go on, nothing committed; by the
    automation: SKIPPED with that reason."""
    lake.sql(
        "CREATE TABLE src (k STRING, v INT); INSERT INTO src VALUES ('x', 1);"
        "CREATE DYNAMIC TABLE a AS SELECT k, v FROM src;"
        "CREATE DYNAMIC TABLE c AS SELECT k, v + 1 AS w FROM a;"
        "ALTER DYNAMIC TABLE a SUSPEND; INSERT INTO src VALUES ('y', 5)"
    )
    before = _version(lake, "c")
    with pytest.raises(LakeError) as raised:
        lake.sql("REFRESH DYNAMIC TABLE c")
    assert raised.value.what == (
        "dynamic table a, which c reads, is suspended and does not reflect the newest "
        "versions of src"
    )
    assert "ALTER DYNAMIC TABLE a RESUME" in (raised.value.fix or "")
    skipped = dynamic.refresh(spark, lake.catalog, "c", RefreshTrigger.UPSTREAM)
    assert (skipped.state, skipped.reason) == (RefreshState.SKIPPED, raised.value.what)
    assert _version(lake, "c") == before
    lake.sql("ALTER DYNAMIC TABLE a RESUME; REFRESH DYNAMIC TABLE c")
    assert rows(lake, "SELECT k, w FROM c ORDER BY k") == [("x", 2), ("y", 6)]


def _version(lake: LakeSession, name: str) -> int:
    return lake.catalog.get(DynamicTableEntry, name).version or 0
