"""The code location: every catalog object becomes a Dagster definition, without starting Spark."""

from __future__ import annotations

from collections import defaultdict

from dagster import Definitions, in_process_executor

from lake_assets.assets.dynamic_tables import automation_sensor, dynamic_table_asset
from lake_assets.assets.event_pipes import event_pipe_sensor
from lake_assets.assets.pipes import ingestion_asset, ingestion_job, pipe_sensor
from lake_assets.assets.tables import table_asset_spec
from lake_assets.assets.volumes import volume_spec
from lake_assets.engine.pipes import EVENT_NOTIFICATION
from resources.catalog import Catalog, CatalogResource
from resources.entries import PipeEntry, VolumeEntry
from resources.settings import LakeSettings
from resources.spark import DeltaSparkResource


def build_definitions(settings: LakeSettings) -> Definitions:
    """Read the catalog (SQLite, no JVM) and assemble assets, sensors and resources from it."""
    catalog = Catalog(settings.catalog_path)
    pipes_by_table: dict[str, list[PipeEntry]] = defaultdict(list)
    for pipe in catalog.objects(PipeEntry):
        if catalog.find_table(pipe.table) and catalog.find_object(VolumeEntry, pipe.volume):
            pipes_by_table[pipe.table].append(pipe)
    assets: list = [volume_spec(volume) for volume in catalog.objects(VolumeEntry)]
    jobs, sensors = [], []
    for table in catalog.tables():
        pipes = pipes_by_table.get(table.name)
        if not pipes:
            assets.append(table_asset_spec(table))
            continue
        assets.append(ingestion_asset(table, pipes))
        job = ingestion_job(table.name)
        jobs.append(job)
        sensors.extend(
            (event_pipe_sensor if pipe.ingest_mode == EVENT_NOTIFICATION else pipe_sensor)(
                pipe, job, settings
            )
            for pipe in pipes
        )
    dynamic_tables = catalog.dynamic_tables()
    assets.extend(dynamic_table_asset(entry) for entry in dynamic_tables)
    if dynamic_tables:
        sensors.append(automation_sensor())
    return Definitions(
        assets=assets,
        jobs=jobs,
        sensors=sensors,
        resources={
            "spark": DeltaSparkResource.from_settings(settings),
            "catalog": CatalogResource(
                lake_home=str(settings.lake_home), load_history_days=settings.load_history_days
            ),
        },
        # One JVM per run, not per step: all of a run's Spark work shares one session.
        executor=in_process_executor,
    )


defs = build_definitions(LakeSettings.from_env())
