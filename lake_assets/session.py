"""The Python API: `Session` (DataFrames over the lakehouse, lake_assets.frames) and
`LakeSession`, which runs SQL statements against the catalog and Spark."""

from lake_assets.frames import Session
from lake_assets.lake_session import LakeSession

__all__ = ["LakeSession", "Session"]
