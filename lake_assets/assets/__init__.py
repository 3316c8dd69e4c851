"""Factories that turn catalog entries into Dagster asset definitions."""
