"""Shared fixtures: build small apps on disk, keep authored modules from leaking between tests."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

MINIMAL = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/test")
    """,
    "agent/instructions.md": "Be helpful.\n",
}

AppFactory = Callable[..., Path]


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture
def make_app(tmp_path: Path) -> AppFactory:
    """``make_app({"agent/tools/x.py": "..."}, minimal=True)`` → a fresh app root."""
    counter = iter(range(1000))

    def build(files: dict[str, str] | None = None, *, minimal: bool = True) -> Path:
        root = tmp_path / f"app{next(counter)}"
        root.mkdir()
        write_files(root, {**(MINIMAL if minimal else {}), **(files or {})})
        return root

    return build


@pytest.fixture(autouse=True)
def _isolate_authored_modules() -> Iterator[None]:
    path_before = list(sys.path)
    yield
    for name in [n for n in sys.modules if n == "agent" or n.startswith("agent.")]:
        del sys.modules[name]
    sys.path[:] = path_before


def wait_for_file(path: Path, *, timeout: float = 30.0) -> None:
    """Block until ``path`` exists (a subprocess reached a point), failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)
