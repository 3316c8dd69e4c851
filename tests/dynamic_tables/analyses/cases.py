"""The analyses' fixture files (see tests/dynamic_tables/fixture_cases.py), as test cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dynamic_tables.fixture_cases import read_cases

FIXTURES = Path(__file__).parent / "fixtures"


def cases(name: str) -> list[pytest.ParameterSet]:
    """The cases of fixtures/`name`: each as (input, expected statements), named by its title."""
    return [
        pytest.param(case.given, case.expected, id=case.title)
        for case in read_cases(FIXTURES / name)
    ]
