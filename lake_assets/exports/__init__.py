"""Changelog exports: a table's changes as per-column operation records, by day or range."""
