"""The typed access to deps type-checks under strict mypy: ``ToolContext[Shop]`` and
``InstructionsContext[Shop]`` read ``ctx.deps`` as a ``Shop``, ``current_deps(Shop)`` is a
``Shop``, and a bare ``ToolContext`` (a tool without deps) is still accepted."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.mypy_cache import seeded_cache

SNIPPET = '''
from eve import InstructionsContext, define_instructions
from eve.context import current_deps
from eve.tools import ToolContext, tool


class Shop:
    def balance(self) -> int:
        return 1


@tool
def untouched(ctx: ToolContext) -> str:
    """A tool that names no deps type."""
    return ctx.session_id


def typed(ctx: ToolContext[Shop]) -> int:
    return ctx.deps.balance()


def mistyped(ctx: ToolContext[Shop]) -> str:
    return ctx.deps.balance()  # the one mistake: an int


@define_instructions
def prompt(ctx: InstructionsContext[Shop]) -> str:
    return str(ctx.deps.balance())


def hook() -> int:
    return current_deps(Shop).balance()
'''


def test_strict_mypy_types_ctx_deps_by_the_annotation(tmp_path: Path) -> None:
    # a new module name each run: mypy replays a cached module's errors under the path it
    # was first read from when the same name and text come again from another directory
    source = tmp_path / f"typed_deps_{uuid.uuid4().hex}.py"
    source.write_text(SNIPPET)
    cache = seeded_cache("deps_typing")
    checked = subprocess.run(
        # eve's modules come from a cache begun from the project's: only the snippet is new
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(source)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    line = next(n for n, text in enumerate(SNIPPET.splitlines(), 1) if "mistake" in text)
    assert checked.stdout.splitlines() == [
        f'{source}:{line}: error: Incompatible return value type (got "int", expected "str")  '
        "[return-value]",
        "Found 1 error in 1 file (checked 1 source file)",
    ]
