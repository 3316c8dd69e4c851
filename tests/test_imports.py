"""Imports run the way data flows: a kind's package imports the kinds before it in
`lake_assets.kinds`, the tables kind and the shared modules, never a kind after it nor the
session that runs it; `core` and `sql` import no kind; `resources` holds Dagster resources and
imports no kind. Read from the source text, without importing anything."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lake_assets"
# What every kind may import besides the kinds before it: the shared mechanisms.
SHARED = {"core", "sql", "automation", "changes"}
# The lowest kind: every kind that loads, reads or writes rows imports its entry, those listed
# before it too (a pipe loads a table, COPY INTO a volume exports one).
TABLES = "tables"


def kind_packages() -> list[str]:
    """The kinds' packages in the order `lake_assets/kinds.py` lists their `KIND`s."""
    tree = ast.parse((PACKAGE / "kinds.py").read_text())
    packages = {
        alias.asname or alias.name: node.module.split(".")[1]
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lake_")
        for alias in node.names
        if alias.name == "kind"
    }
    listed = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "KINDS"
    )
    assert isinstance(listed, ast.Tuple)
    return [packages[ast.unparse(item).removesuffix(".KIND")] for item in listed.elts]


def imports(folder: Path) -> Iterator[tuple[str, str]]:
    """(file, the `lake_assets` package or module it imports) for each import under `folder`."""
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("lake_assets."):
                    yield str(path.relative_to(ROOT)), name.split(".")[1]


def test_the_registry_lists_every_kind_package_once() -> None:
    kinds = kind_packages()
    assert kinds[:2] == ["connections", "volumes"]
    assert len(set(kinds)) == len(kinds) == 9
    assert all((PACKAGE / kind / "kind.py").is_file() for kind in kinds)
    assert TABLES in kinds


def test_a_kind_imports_only_the_kinds_before_it_and_the_shared_modules() -> None:
    kinds = kind_packages()
    wrong = [
        f"{file} imports lake_assets.{target}"
        for index, kind in enumerate(kinds)
        for file, target in imports(PACKAGE / kind)
        if target not in {kind, TABLES, *SHARED, *kinds[:index]}
    ]
    assert wrong == []


def test_core_and_sql_import_no_kind_and_resources_only_core_and_sql() -> None:
    wrong = [
        f"{file} imports lake_assets.{target}"
        for folder, allowed in (
            (PACKAGE / "core", {"core", "sql"}),
            (PACKAGE / "sql", {"core", "sql"}),
            (ROOT / "resources", {"core", "sql"}),
        )
        for file, target in imports(folder)
        if target not in allowed
    ]
    assert wrong == []
