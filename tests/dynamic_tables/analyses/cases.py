"""Fixture files of the analyses' tests, input SQL beside what it gives: each case a `# title:`
line, its input statement, then the statements it is expected to give; cases are apart by a
blank line. A statement ends with `;` and may run over several lines."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def cases(name: str) -> list[pytest.ParameterSet]:
    """The cases of fixtures/`name`: each as (input, expected statements), named by its title."""
    found = []
    for block in (FIXTURES / name).read_text().strip().split("\n\n"):
        title, *lines = block.strip().splitlines()
        assert title.startswith("# title: "), f"{name}: a case opens with its title: {title}"
        statements = " ".join(line.strip() for line in lines).split(";")
        assert statements.pop().strip() == "", f"{name}: {title} ends with ';'"
        given, *expected = (statement.strip() for statement in statements)
        found.append(pytest.param(given, expected, id=title.removeprefix("# title: ")))
    return found
