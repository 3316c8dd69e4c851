"""Executes parsed statements on Spark + Delta, keeping the catalog in step."""
