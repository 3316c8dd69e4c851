"""A result read by name repeats no column name, in any case (Spark-free)."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.core.names import refuse_repeated_columns


def test_a_repeated_column_is_refused_whatever_its_case() -> None:
    refuse_repeated_columns("view v", ["id", "amount"])
    with pytest.raises(LakeError) as caught:
        refuse_repeated_columns("view v", ["ID", "amount", "id"])
    assert str(caught.value) == (
        "column id appears twice in the result of view v — give the columns distinct aliases"
    )
