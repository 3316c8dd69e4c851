"""Fixtures of the changelog export tests: both ways an export writes its records."""

from __future__ import annotations

import pytest

from lake_assets.exports import writing


@pytest.fixture(params=["in-process", "spark"])
def writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways records reach a local table or a Parquet file: a small export's through Arrow in
    this process (delta-rs writes the table), a larger one's (here every one) through Spark."""
    if request.param == "spark":
        monkeypatch.setattr(writing, "_IN_PROCESS", 0)
    return str(request.param)
