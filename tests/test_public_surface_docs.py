"""What the docs teach is the public surface: every ``import eve…`` and ``from eve… import``
in docs/**/*.md code blocks (```python, run or not), the README's and the example agent's
code names a public module (docs/architecture.md, "The public surface") and, for a
``from`` import, only names in its ``__all__``."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import REPO_ROOT
from tests.test_public_surface import PUBLIC

PAGES = [*sorted((REPO_ROOT / "docs").rglob("*.md")), REPO_ROOT / "README.md"]
AGENT_FILES = sorted((REPO_ROOT / "agent").rglob("*.py"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", flags=re.M | re.S)


@dataclass(frozen=True)
class Import:
    where: str
    module: str
    #: the names a ``from`` import takes; None for ``import eve.x``
    names: tuple[str, ...] | None


def python_sources() -> Iterator[tuple[str, str]]:
    """(where, code): each python block of the pages, then each file of the example agent."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block[1] == "python":
                line = text.count("\n", 0, block.start()) + 1
                yield f"{page.relative_to(REPO_ROOT)}:{line}", block[2]
    for path in AGENT_FILES:
        yield str(path.relative_to(REPO_ROOT)), path.read_text(encoding="utf-8")


def eve_imports(where: str, code: str) -> Iterator[Import]:
    for node in ast.walk(ast.parse(code, filename=where)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "eve" or node.module.startswith("eve."):
                names = tuple(alias.name for alias in node.names)
                yield Import(f"{where}+{node.lineno}", node.module, names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "eve" or alias.name.startswith("eve."):
                    yield Import(f"{where}+{node.lineno}", alias.name, None)


def all_imports() -> list[Import]:
    return [found for where, code in python_sources() for found in eve_imports(where, code)]


def refusal(found: Import) -> str | None:
    """Why ``found`` reaches past the public surface; None when it does not."""
    if found.module not in PUBLIC:
        return f"{found.where}: {found.module} is not a public module"
    exported = importlib.import_module(found.module).__all__
    # `from eve import manifest` imports the public module eve.manifest
    outside = [
        name
        for name in found.names or ()
        if name not in exported and f"{found.module}.{name}" not in PUBLIC
    ]
    if outside:
        return f"{found.where}: {found.module} does not export {', '.join(outside)}"
    return None


def test_the_walk_finds_the_imports_it_checks() -> None:
    # Guards the walk: one that found nothing would pass the check below.
    found = all_imports()
    assert len(found) > 100
    wheres = {f.where.split("+")[0].split(":")[0] for f in found}
    assert {"docs/testing.md", "docs/channels/a2a.md", "agent/agent.py"} <= wheres
    assert Import("agent/agent.py+3", "eve", ("define_agent",)) in found


def test_docs_readme_and_the_example_agent_import_only_the_public_surface() -> None:
    refused = [reason for found in all_imports() if (reason := refusal(found))]
    assert refused == [], "\n".join(refused)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("from eve.tools import tool", None),
        ("import eve.errors", None),
        ("from eve.execution.loop import run_agent", "eve.execution.loop is not a public module"),
        ("import eve.sessions", "eve.sessions is not a public module"),
        ("from eve.tools import tool, _secret", "eve.tools does not export _secret"),
        ("from eve import manifest", None),
        ("from eve import sessions", "eve does not export sessions"),
    ],
)
def test_the_check_refuses_what_is_not_public(code: str, reason: str | None) -> None:
    [found] = list(eve_imports("x.md:1", code))
    assert refusal(found) == (f"x.md:1+1: {reason}" if reason else None)
