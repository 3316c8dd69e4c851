"""PySpark's column functions as documented, `from lake_assets import functions as F`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.functions import *  # noqa: F403 - the whole of PySpark's functions, as the Python API's
from pyspark.sql.functions import __all__ as _pyspark_functions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lake_assets.frames import LakeFrame

__all__ = list(_pyspark_functions)


def broadcast(df: DataFrame | LakeFrame) -> DataFrame | LakeFrame:  # type: ignore[no-redef]
    """Mark a frame for a broadcast join; a LakeFrame stays one, keeping the streams it reads
    (PySpark's own broadcast would return a plain DataFrame)."""
    return df.hint("broadcast")
