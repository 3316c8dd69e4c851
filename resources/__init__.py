"""Dagster resources: the Spark/Delta session, the catalog, object storage, queues and secrets."""

from resources.catalog import CatalogResource
from resources.spark import DeltaSparkResource

__all__ = ["CatalogResource", "DeltaSparkResource"]
