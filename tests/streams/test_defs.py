"""Streams in Dagster, on real Spark and Delta: each stream is an asset partitioned by its source's
data commits, and one sensor (no Spark) adds a key per commit and reports a key materialized once
the stream's offset has passed it; the instance is brought to what each tick returns."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    AssetKey,
    DagsterInstance,
    DefaultSensorStatus,
    DynamicPartitionsDefinition,
    SensorResult,
    build_sensor_context,
)

from lake_assets.core.catalog import Catalog
from lake_assets.core.ticks import minimum_interval
from lake_assets.definitions import build_definitions
from lake_assets.session import LakeSession
from lake_assets.streams.defs import (
    SENSOR_INTERVAL_SECONDS,
    STREAMS_GROUP,
    STREAMS_SENSOR,
    build_defs,
    partitions_name,
    stream_spec,
    version_key,
)
from lake_assets.streams.entry import StreamEntry, StreamMode
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.defs import volume_key

TABLE = "CREATE TABLE {name} (id INT, name VARCHAR, age INT)"
Tick = Callable[[], SensorResult]


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def ticker(lake: LakeSession, instance: DagsterInstance, partitions: int = 10_000) -> Tick:
    """Ticks of the streams sensor, each applied to the instance as the daemon does (events,
    then partition requests) and handing its cursor to the next."""
    settings = replace(lake.settings, stream_partitions=partitions)
    cursor: list[str | None] = [None]

    def tick() -> SensorResult:
        sensor = build_defs(lake.catalog, settings, LakeSession).resolve_sensor_def(STREAMS_SENSOR)
        result = sensor(build_sensor_context(instance=instance, cursor=cursor[0]))
        assert isinstance(result, SensorResult)
        added = {
            (request.partitions_def_name, key)
            for request in result.dynamic_partitions_requests or ()
            if isinstance(request, AddDynamicPartitionsRequest)
            for key in request.partition_keys
        }
        deleted = {
            (request.partitions_def_name, key)
            for request in result.dynamic_partitions_requests or ()
            if not isinstance(request, AddDynamicPartitionsRequest)
            for key in request.partition_keys
        }
        assert not added & deleted, "Dagster refuses to add and delete one key in a tick"
        for event in result.asset_events:
            instance.report_runless_asset_event(event)
        for request in result.dynamic_partitions_requests or ():
            if isinstance(request, AddDynamicPartitionsRequest):
                instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
            else:
                for key in request.partition_keys:
                    instance.delete_dynamic_partition(request.partitions_def_name, key)
        cursor[0] = result.cursor
        return result

    return tick


def keys(instance: DagsterInstance, stream: str) -> list[int]:
    return sorted(int(key) for key in instance.get_dynamic_partitions(partitions_name(stream)))


def missing(instance: DagsterInstance, stream: str) -> list[int]:
    """The stream's keys not materialized: the versions it has still to deliver."""
    done = instance.get_materialized_partitions(AssetKey(stream))
    return [v for v in keys(instance, stream) if version_key(v) not in done]


def reported(result: SensorResult) -> list[tuple[str, int]]:
    return [(e.asset_key.path[-1], int(e.partition or "")) for e in result.asset_events]


def latest(lake: LakeSession, table: str) -> int:
    return lake.catalog.get(TableEntry, table).version or 0


def insert(lake: LakeSession, table: str, *ids: int) -> list[int]:
    """One INSERT per id; the versions they committed."""
    versions = []
    for row in ids:
        lake.sql(f"INSERT INTO {table} VALUES ({row}, 'n{row}', {row})")
        versions.append(latest(lake, table))
    return versions


def consume(lake: LakeSession, stream: str) -> None:
    lake.sql(f"INSERT INTO sink SELECT id, name, age FROM {stream}")


def test_a_stream_is_a_partitioned_asset_downstream_of_its_source(lake: LakeSession) -> None:
    lake.sql(
        f"{TABLE.format(name='t')}; CREATE TABLE STREAM s ON TABLE t COMMENT 'orders'; "
        "CREATE DYNAMIC TABLE d AS SELECT id, age FROM t; "
        "CREATE TABLE STREAM ds ON DYNAMIC TABLE d"
    )
    defs = build_definitions(lake.settings)
    graph = defs.resolve_asset_graph()
    for stream, source, about in (("s", "t", "orders"), ("ds", "d", "changes of d")):
        node = graph.get(AssetKey(stream))
        assert node.parent_keys == {AssetKey(source)}
        assert node.group_name == STREAMS_GROUP
        assert node.kinds == {"delta"}
        assert not node.is_materializable
        assert node.description.startswith(f"{about}. One partition per commit of {source}")
        assert node.description.endswith(
            f"no commit of {source} is pending, the stream is up to date."
        )
        assert node.partitions_def == DynamicPartitionsDefinition(name=f"stream_{stream}_versions")
        assert node.metadata["lake/source"] == source
        assert node.metadata["lake/mode"] == StreamMode.STANDARD.value
        entry = lake.catalog.get(StreamEntry, stream)
        assert node.metadata["lake/source_location"].value == entry.source_location
    sensor = defs.resolve_sensor_def(STREAMS_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == minimum_interval(SENSOR_INTERVAL_SECONDS)
    volume_stream = replace(lake.catalog.get(StreamEntry, "s"), source="v", source_kind="volume")
    assert [dep.asset_key for dep in stream_spec(volume_stream).deps] == [volume_key("v")]
    assert version_key(42) == "00000000000000000042" == f"{42:020d}"


def test_without_streams_there_is_no_sensor(lake: LakeSession) -> None:
    assert build_defs(Catalog(lake.settings.catalog_path), lake.settings, LakeSession).sensors == []


def test_keys_follow_data_commits_and_are_materialized_once_consumed(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"{TABLE.format(name='t')}; {TABLE.format(name='sink')}; CREATE TABLE STREAM s ON TABLE t"
    )
    tick = ticker(lake, instance)
    first = tick()
    assert (first.dynamic_partitions_requests, first.asset_events) == ([], [])

    v1, v2 = insert(lake, "t", 1, 2)
    location = lake.catalog.get(TableEntry, "t").location
    lake.spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('note' = 'x')")
    (v4,) = insert(lake, "t", 4)
    assert v4 == v2 + 2  # the metadata-only commit between has no key
    tick()
    assert keys(instance, "s") == missing(instance, "s") == [v1, v2, v4]

    consume(lake, "s")
    (v5,) = insert(lake, "t", 5)
    consumed = tick()
    assert reported(consumed) == [("s", v1), ("s", v2), ("s", v4)]
    assert consumed.skip_reason.skip_message == "s: 1 new, 3 delivered, 1 pending"
    assert consumed.asset_events[0].metadata["lake/offset"].value == v4
    assert consumed.asset_events[0].metadata["lake/pending_versions"].value == 1
    assert keys(instance, "s") == [v1, v2, v4, v5]
    assert missing(instance, "s") == [v5]

    idle = tick()
    assert (idle.dynamic_partitions_requests, idle.asset_events) == ([], [])

    # A version committed and consumed between two ticks gets its key and its materialization.
    (v6,) = insert(lake, "t", 6)
    consume(lake, "s")
    assert reported(tick()) == [("s", v5), ("s", v6)]
    assert (keys(instance, "s"), missing(instance, "s")) == ([v1, v2, v4, v5, v6], [])

    # A sensor that lost its cursor finds the instance in step: nothing to add or report.
    restarted = ticker(lake, instance)()
    assert (restarted.dynamic_partitions_requests, restarted.asset_events) == ([], [])


def test_a_source_dropped_and_created_again_under_its_name_starts_its_stream_afresh(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"{TABLE.format(name='t')}; {TABLE.format(name='sink')}; CREATE TABLE STREAM s ON TABLE t"
    )
    tick = ticker(lake, instance)
    tick()
    v1, v2 = insert(lake, "t", 1, 2)
    consume(lake, "s")
    tick()
    assert (keys(instance, "s"), missing(instance, "s")) == ([v1, v2], [])

    # As `make demo` run twice does: the new table's versions reuse the old one's numbers.
    lake.sql(
        f"DROP TABLE STREAM s; DROP TABLE t; {TABLE.format(name='t')}; "
        "CREATE TABLE STREAM s ON TABLE t"
    )
    (w1,) = insert(lake, "t", 3)
    assert w1 == v1
    tick()
    assert (keys(instance, "s"), missing(instance, "s")) == ([w1], [w1])
    consume(lake, "s")
    assert reported(tick()) == [("s", w1)]
    assert missing(instance, "s") == []


def test_setting_the_offset_by_hand_and_initial_rows(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"{TABLE.format(name='t')}; {TABLE.format(name='sink')}; "
        "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE')"
    )
    start = lake.catalog.get(StreamEntry, "s").offset
    v1, v2, v3 = insert(lake, "t", 1, 2, 3)
    tick = ticker(lake, instance)
    tick()
    # The starting version's key stands for the initial rows until they are consumed.
    assert missing(instance, "s") == [start, v1, v2, v3]
    consume(lake, "s")
    tick()
    assert missing(instance, "s") == []

    # Moved back: what comes after the new offset is missing again, what is before stays.
    lake.sql(f"ALTER STREAM s SET OFFSET (VERSION => {v1})")
    tick()
    assert keys(instance, "s") == [start, v1, v2, v3]
    assert missing(instance, "s") == [v2, v3]
    lake.sql("ALTER STREAM s SET OFFSET LATEST")
    assert [v for _, v in reported(tick())] == [v2, v3]
    assert missing(instance, "s") == []


def test_pruning_drops_the_oldest_consumed_keys_first(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"{TABLE.format(name='t')}; {TABLE.format(name='sink')}; CREATE TABLE STREAM s ON TABLE t"
    )
    tick = ticker(lake, instance, partitions=3)
    tick()  # the sensor sees the stream at its start
    _, v2 = insert(lake, "t", 1, 2)
    consume(lake, "s")
    v3, v4 = insert(lake, "t", 3, 4)
    tick()
    assert keys(instance, "s") == [v2, v3, v4]
    assert missing(instance, "s") == [v3, v4]
    v5, v6 = insert(lake, "t", 5, 6)
    tick()
    assert keys(instance, "s") == missing(instance, "s") == [v4, v5, v6]


def test_a_stream_whose_source_is_gone_does_not_hide_the_others(
    lake: LakeSession, instance: DagsterInstance
) -> None:
    lake.sql(
        f"{TABLE.format(name='gone')}; {TABLE.format(name='t')}; "
        "CREATE TABLE STREAM a ON TABLE gone; CREATE TABLE STREAM s ON TABLE t; DROP TABLE gone"
    )
    tick = ticker(lake, instance)
    (v1,) = insert(lake, "t", 1)
    result = tick()
    assert [r.partitions_def_name for r in result.dynamic_partitions_requests] == [
        partitions_name("s")
    ]
    assert missing(instance, "s") == [v1]
    assert keys(instance, "a") == []
