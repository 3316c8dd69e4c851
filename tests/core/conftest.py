"""Fixtures of the core tests: a new, empty catalog on SQLite and on Postgres, by turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.postgres_server import new_database


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty catalog's location: a SQLite file, or a database of its own on Postgres."""
    if request.param == "sqlite":
        return str(tmp_path / "lake" / "catalog.db")
    return new_database(request.getfixturevalue("postgres_url"))
