"""A storage connection as the catalog keeps it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lake_assets.core.entries import CatalogObject


@dataclass(frozen=True)
class ConnectionEntry(CatalogObject):
    """Secrets are kept as references: `env:VAR` or `enc:<token>` (see resources.secrets)."""

    NAMESPACE: ClassVar[str] = "connection"
    LABEL: ClassVar[str] = "storage connection"
    SHOW: ClassVar[str] = "SHOW STORAGE CONNECTIONS"
    CREATE: ClassVar[str] = "CREATE STORAGE CONNECTION"

    type: str = "LOCAL"
    endpoint: str | None = None
    access_id: str | None = None
    access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None
