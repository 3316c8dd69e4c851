"""Dagster resources: the Spark/Delta session, the catalog, and their settings."""

from resources.catalog import Catalog, CatalogResource
from resources.errors import LakeError
from resources.settings import LakeSettings
from resources.spark import DeltaSparkResource

__all__ = ["Catalog", "CatalogResource", "DeltaSparkResource", "LakeError", "LakeSettings"]
