"""A Kafka pipe in Dagster: its sensor plans batches without Spark and asks for one run per
batch; the table's ingestion asset loads it on real Spark + Delta, records the batch's figures
and checks that no message was set aside."""

from __future__ import annotations

from confluent_kafka import Producer
from dagster import (
    AssetCheckKey,
    AssetKey,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    SensorResult,
    build_sensor_context,
)

from lake_assets.definitions import build_definitions
from lake_assets.pipes.checks import MESSAGES_CHECK
from lake_assets.session import LakeSession
from resources.kafka_broker import Broker
from tests.ingest_helpers import rows
from tests.kafka_server import new_topic
from tests.pipes.kafka.test_pipe import counting_pipe, send


def requested(defs: Definitions, instance: DagsterInstance) -> str:
    """The run key of the one run the pipe's sensor asks for."""
    context = build_sensor_context(instance=instance, definitions=defs)
    result = defs.resolve_sensor_def("counts")(context)
    assert isinstance(result, SensorResult), result
    (request,) = result.run_requests
    return request.run_key


def test_the_pipe_runs_batch_after_batch_with_its_figures_and_check(
    lake: LakeSession, kafka_broker: Broker, instance: DagsterInstance
) -> None:
    topic = new_topic(kafka_broker.bootstrap)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    lake.sql("CREATE TABLE numbers (partition INT, offset BIGINT, n INT)")
    lake.sql(
        counting_pipe(kafka_broker.bootstrap, topic, 2).replace(
            " AS COPY", " BATCH_INTERVAL_IN_SECONDS = '3' AS COPY"
        )
    )
    defs = build_definitions(lake.settings)
    table = defs.resolve_asset_graph().get(AssetKey("numbers"))
    assert table.check_keys == {AssetCheckKey(AssetKey("numbers"), MESSAGES_CHECK)}
    sensor = defs.resolve_sensor_def("counts")
    # BATCH_INTERVAL_IN_SECONDS = 3: every daemon loop (5 s), declared a second under.
    assert (sensor.job_name, sensor.minimum_interval_seconds) == ("ingest_numbers_job", 4)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert AssetKey(["kafka", topic]) in table.parent_entity_keys
    assert defs.resolve_asset_graph().get(AssetKey(["kafka", topic])).group_name == "kafka_topics"
    context = build_sensor_context(instance=instance, definitions=defs)
    idle = sensor(context)
    assert isinstance(idle, SensorResult)
    assert idle.skip_reason is not None
    assert idle.skip_reason.skip_message == "no new messages"
    (observed,) = idle.asset_events
    assert observed.asset_key == AssetKey(["kafka", topic])
    assert observed.tags["dagster/data_version"] == '{"0": 0, "1": 0}'

    send(producer, topic, ["1", "x", "3", "4"])
    first = requested(defs, instance)
    assert first.endswith("#1")
    assert requested(defs, instance) == first  # a planned batch is asked for as it is
    job = defs.resolve_job_def("ingest_numbers_job")
    result = job.execute_in_process(instance=instance)
    (event,) = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert (metadata["kafka_rows"], metadata["kafka_bad_messages"]) == (3, 1)
    assert metadata["kafka_offsets_read"] == 4
    assert metadata["kafka_lag"] == 0
    (check,) = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == (MESSAGES_CHECK, False)

    send(producer, topic, ["5", "6"])
    assert requested(defs, instance).endswith("#2")
    result = job.execute_in_process(instance=instance)
    (check,) = result.get_asset_check_evaluations()
    assert check.passed
    assert rows(lake, "SELECT n FROM numbers ORDER BY n") == [(1,), (3,), (4,), (5,), (6,)]
