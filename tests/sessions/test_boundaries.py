"""DBOS stays behind eve.sessions: no other eve module imports it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_sessions_package_imports_dbos() -> None:
    eve = REPO_ROOT / "eve"
    importers = {
        str(path.relative_to(eve)) for path in eve.rglob("*.py") if "dbos" in imported_roots(path)
    }
    assert importers, "the durable runtime imports dbos somewhere"
    assert {p for p in importers if not p.startswith("sessions/")} == set()
