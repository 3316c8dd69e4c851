"""Fixture files of input SQL beside what it gives, as the analyses' and the rewrites' tests keep
them: each case a `# title:` line, an optional `# columns: t(a, b), u(c)` line (the sources'
columns), its input statement, then the statements it is expected to give; cases are apart by a
blank line. A statement ends with `;` and may run over several lines; read `by_line`, each line
is one (for expectations that hold semicolons of their own, as EXPLAIN's rules)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    title: str
    columns: dict[str, list[str]]
    given: str
    expected: list[str]


def columns(line: str) -> dict[str, list[str]]:
    """`t(a, b), u(c)` as {"t": ["a", "b"], "u": ["c"]}."""
    return {
        table: [name.strip() for name in names.split(",")]
        for table, names in re.findall(r"(\w+)\(([^)]*)\)", line)
    }


def read_cases(path: Path, by_line: bool = False) -> list[Case]:
    """The cases of a fixture file, in order; their titles are distinct."""
    found = []
    for block in path.read_text().strip().split("\n\n"):
        title, *lines = block.strip().splitlines()
        assert title.startswith("# title: "), f"{path.name}: a case opens with its title: {title}"
        given: dict[str, list[str]] = {}
        if lines and lines[0].startswith("# columns: "):
            given = columns(lines.pop(0))
        if by_line:
            first, *rest = lines
        else:
            statements = " ".join(line.strip() for line in lines).split(";")
            assert statements.pop().strip() == "", f"{path.name}: {title} ends with ';'"
            first, *rest = (statement.strip() for statement in statements)
        found.append(Case(title.removeprefix("# title: "), given, first, rest))
    titles = [case.title for case in found]
    assert len(set(titles)) == len(titles), f"{path.name}: two cases of one title"
    return found
