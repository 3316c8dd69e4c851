"""A table's clustering columns as its Delta log has them: a crash between Delta's ALTER … CLUSTER
BY and the catalog's record must not leave DESC, OPTIMIZE or EXPLAIN believing the old layout."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from lake_assets.core.catalog import Catalog
from lake_assets.core.log_check import newest_unrecorded
from lake_assets.tables.entry import TableEntry

# The Delta domain whose metadata names a table's clustering columns.
CLUSTERING_DOMAIN = "delta.clustering"


def clustered_by(catalog: Catalog, entry: TableEntry) -> tuple[str, ...]:
    """The columns table `entry`'s files are clustered by; a layout committed after the catalog's
    recorded version (the catalog's record was cut off) is recorded now."""
    committed = committed_clustering(entry.location, entry.version)
    if committed is None or committed == entry.cluster_by:
        return entry.cluster_by
    catalog.update(TableEntry, entry.name, lambda found: replace(found, cluster_by=committed))
    return committed


def committed_clustering(location: str, since: int | None) -> tuple[str, ...] | None:
    """The clustering columns set by the newest commit after version `since`, read without Spark;
    None when none set them."""
    found = newest_unrecorded(location, since, _clustering_columns)
    return None if found is None else found[1]


def _clustering_columns(action: dict[str, Any]) -> tuple[str, ...] | None:
    domain = action.get("domainMetadata") or {}
    if domain.get("domain") != CLUSTERING_DOMAIN:
        return None
    paths = json.loads(domain["configuration"])["clusteringColumns"]
    return tuple(".".join(path) for path in paths)
