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
    GraphDefinition,
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
    """A relation's asset is defined once. A kind that materializes or observes it (a pipe its
    table, a volume's observation) defines it, and the specs other kinds gave the same key give
    way; specs of one key from several kinds (a table's, and a task's that writes it) merge, the
    later ones adding their deps, which the defining asset takes too when one op makes it. So do
    checks: those the defining asset runs itself (a pipe's ingestion runs its table's
    expectations) replace the same checks defined apart. Each part keeps everything else it
    defines (jobs, sensors, schedules, resources)."""
    merged: dict[AssetKey, AssetSpec] = {}
    for part in parts:
        for asset in part.assets or ():
            if isinstance(asset, AssetSpec):
                first = merged.get(asset.key)
                merged[asset.key] = (
                    asset if first is None else first.merge_attributes(deps=asset.deps)
                )
    defined = {
        key
        for part in parts
        for asset in part.assets or ()
        if isinstance(asset, AssetsDefinition)
        for key in asset.keys
    }
    run_by_assets = {
        key
        for part in parts
        for asset in part.assets or ()
        if isinstance(asset, AssetsDefinition)
        for key in asset.check_keys
    }
    placed: set[AssetKey] = set(defined)
    kept = []
    for part in parts:
        assets: list[Any] = []
        for asset in part.assets or ():
            if isinstance(asset, AssetsDefinition):
                assets.append(_with_deps(asset, merged))
            elif not isinstance(asset, AssetSpec):
                assets.append(asset)
            elif asset.key not in placed:
                assets.append(merged[asset.key])
                placed.add(asset.key)
        kept.append(
            Definitions(
                assets=assets,
                asset_checks=[
                    checks
                    for checks in part.asset_checks or ()
                    if not set(checks.check_keys) & run_by_assets
                ],
                jobs=part.jobs,
                sensors=part.sensors,
                schedules=part.schedules,
                resources=part.resources,
                loggers=part.loggers,
                executor=part.executor,
            )
        )
    return kept


def _with_deps(asset: AssetsDefinition, specs: dict[AssetKey, AssetSpec]) -> AssetsDefinition:
    """The asset with the deps other kinds' specs gave its keys. Dagster adds deps to an op's
    assets only; a graph's (a pipe's ingestion) keep their own."""
    if isinstance(asset.node_def, GraphDefinition):
        return asset

    def added(spec: AssetSpec) -> AssetSpec:
        own = {dep.asset_key for dep in spec.deps}
        new = [dep for dep in specs[spec.key].deps if dep.asset_key not in own]
        return spec.merge_attributes(deps=new) if new else spec

    if not any(key in specs for key in asset.keys):
        return asset
    return asset.map_asset_specs(lambda spec: added(spec) if spec.key in specs else spec)


defs = build_definitions(LakeSettings.from_env())
