"""The code location: every catalog object becomes a Dagster definition, without starting Spark."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from lake_assets.assets.tables import table_asset_spec
from resources.catalog import Catalog, CatalogResource
from resources.settings import LakeSettings
from resources.spark import DeltaSparkResource


def build_definitions(settings: LakeSettings) -> Definitions:
    """Read the catalog (SQLite, no JVM) and assemble assets and resources from it."""
    catalog = Catalog(settings.catalog_path)
    return Definitions(
        assets=[table_asset_spec(entry) for entry in catalog.tables()],
        resources={
            "spark": DeltaSparkResource.from_settings(settings),
            "catalog": CatalogResource(path=str(settings.catalog_path)),
        },
        # One JVM per run, not per step: all of a run's Spark work shares one session.
        executor=in_process_executor,
    )


defs = build_definitions(LakeSettings.from_env())
