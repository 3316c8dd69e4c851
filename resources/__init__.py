"""Dagster resources: the Spark/Delta session, the catalog, object storage, queues and secrets."""
