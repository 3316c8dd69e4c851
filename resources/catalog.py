"""The catalog as a Dagster resource: paths only, so it is cheap to build in every run."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings


class CatalogResource(ConfigurableResource):
    """The catalog and the lakehouse settings runs need; holds paths only, so it is cheap."""

    lake_home: str
    load_history_days: float = 7.0
    # A shared catalog database (LAKE_CATALOG_URL); given as an EnvVar, so its password stays
    # out of run config and the UI.
    catalog_url: str | None = None
    # An object storage warehouse (LAKE_WAREHOUSE), where objects a run creates go.
    warehouse_url: str | None = None

    @property
    def settings(self) -> LakeSettings:
        return LakeSettings(
            lake_home=Path(self.lake_home),
            load_history_days=self.load_history_days,
            catalog_url=self.catalog_url or None,
            warehouse_url=self.warehouse_url or None,
        )

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.catalog_location)
