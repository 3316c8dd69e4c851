"""What the pipes' Dagster tests share: an ephemeral instance per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import DagsterInstance


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral
