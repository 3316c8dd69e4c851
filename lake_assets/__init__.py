"""Lakehouse objects (volumes, pipes, tables, streams, dynamic tables) as Dagster definitions."""
