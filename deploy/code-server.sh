#!/usr/bin/env bash
# Serves the code location `lake` (lake_assets.definitions) over gRPC for deploy/workspace.yaml.
# It needs the same LAKE_* variables as every run (LAKE_CATALOG_URL, LAKE_SPARK_MASTER, ...):
# its runs start as its child processes. Reloading the location in the UI (or after `lake sql`
# changed the catalog's objects) reloads the definitions without restarting this server.
set -euo pipefail
exec dagster code-server start \
  --module-name lake_assets.definitions \
  --location-name lake \
  --host "${LAKE_CODE_SERVER_BIND:-0.0.0.0}" \
  --port "${LAKE_CODE_SERVER_PORT:-4000}"
