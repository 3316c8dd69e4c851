"""A Kafka pipe's topic as an external asset upstream of its table, observed by the pipe's
sensor: its data version is its latest offsets, so the UI shows when the topic moved."""

from __future__ import annotations

import json

from dagster import AssetKey, AssetObservation, AssetSpec

from lake_assets.automation import DATA_VERSION_TAG
from lake_assets.core.settings import LakeSettings
from lake_assets.pipes.entry import PipeEntry
from lake_assets.pipes.kafka.batches import admin_of, kafka_source
from resources.kafka import isolation

TOPICS_GROUP = "kafka_topics"


def topic_key(topic: str) -> AssetKey:
    return AssetKey(["kafka", topic])


def topic_spec(pipe: PipeEntry) -> AssetSpec:
    source = kafka_source(pipe)
    return AssetSpec(
        topic_key(pipe.topic),
        group_name=TOPICS_GROUP,
        kinds={"kafka"},
        description=f"Kafka topic {pipe.topic} at {source.bootstrap}",
    )


def topic_observation(settings: LakeSettings, pipe: PipeEntry) -> AssetObservation:
    """The topic's latest offsets as its data version (a LakeError when the broker is away)."""
    admin = admin_of(pipe, settings)
    level = isolation(dict(kafka_source(pipe).options))
    latest = admin.offsets(admin.topic(pipe.topic), "latest", level)
    version = json.dumps({str(p): o for p, o in sorted(latest.items())})
    return AssetObservation(
        asset_key=topic_key(pipe.topic),
        metadata={"latest_offsets": version, "partitions": len(latest)},
        tags={DATA_VERSION_TAG: version},
    )
