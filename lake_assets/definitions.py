"""The code location: every catalog object becomes a Dagster definition, without starting Spark."""

from __future__ import annotations

import importlib
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Definitions,
    EnvVar,
    in_process_executor,
)

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
        *_one_asset_per_key(parts),
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


def _one_asset_per_key(parts: list[Definitions]) -> list[Definitions]:
    """A relation's asset is defined once. A kind that materializes it (a pipe its table) defines
    it, and the specs other kinds gave the same key give way; specs of one key from several kinds
    (a table's, and a task's that writes it) merge, the later ones adding their deps. Each part
    keeps everything else it defines (checks, jobs, sensors, schedules, resources)."""
    materialized = {
        key
        for part in parts
        for asset in part.assets or ()
        if isinstance(asset, AssetsDefinition)
        for key in asset.keys
    }
    merged: dict[AssetKey, AssetSpec] = {}
    for part in parts:
        for asset in part.assets or ():
            if isinstance(asset, AssetSpec) and asset.key not in materialized:
                first = merged.get(asset.key)
                merged[asset.key] = (
                    asset if first is None else first.merge_attributes(deps=asset.deps)
                )
    placed: set[AssetKey] = set()
    kept = []
    for part in parts:
        assets: list[Any] = []
        for asset in part.assets or ():
            if not isinstance(asset, AssetSpec):
                assets.append(asset)
            elif asset.key in merged and asset.key not in placed:
                assets.append(merged[asset.key])
                placed.add(asset.key)
        kept.append(
            Definitions(
                assets=assets,
                asset_checks=part.asset_checks,
                jobs=part.jobs,
                sensors=part.sensors,
                schedules=part.schedules,
                resources=part.resources,
                loggers=part.loggers,
                executor=part.executor,
            )
        )
    return kept


defs = build_definitions(LakeSettings.from_env())
