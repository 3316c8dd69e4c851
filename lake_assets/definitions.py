"""The code location: every catalog object becomes a Dagster definition, without starting Spark."""

from __future__ import annotations

import importlib

from dagster import AssetsDefinition, AssetSpec, Definitions, EnvVar, in_process_executor

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.kinds import KINDS
from lake_assets.lake_session import LakeSession
from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource


def build_definitions(settings: LakeSettings) -> Definitions:
    """Read the catalog (no JVM) and merge each kind's definitions with the resources."""
    catalog = Catalog(settings.catalog_location)
    parts = [
        importlib.import_module(kind.defs).build_defs(catalog, settings, LakeSession)
        for kind in KINDS
        if kind.defs is not None
    ]
    return Definitions.merge(
        *_superseded_specs_dropped(parts),
        Definitions(
            resources={
                "spark": DeltaSparkResource.from_settings(settings),
                "catalog": CatalogResource(
                    lake_home=str(settings.lake_home),
                    load_history_days=settings.load_history_days,
                    catalog_url=EnvVar("LAKE_CATALOG_URL") if settings.catalog_url else None,
                    warehouse_url=settings.warehouse_url,
                ),
            },
            # One JVM per run, not per step: all of a run's Spark work shares one session.
            executor=in_process_executor,
        ),
    )


def _superseded_specs_dropped(parts: list[Definitions]) -> list[Definitions]:
    """A kind that writes a relation (a pipe its table) defines its asset; the external spec
    another kind gave the same key gives way to it."""
    written = {
        key
        for part in parts
        for asset in part.assets or ()
        if isinstance(asset, AssetsDefinition)
        for key in asset.keys
    }
    return [
        Definitions(
            assets=[
                asset
                for asset in part.assets or ()
                if not (isinstance(asset, AssetSpec) and asset.key in written)
            ],
            jobs=part.jobs,
            sensors=part.sensors,
            schedules=part.schedules,
        )
        for part in parts
    ]


defs = build_definitions(LakeSettings.from_env())
