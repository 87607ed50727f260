"""The example agent, copied and resolved once per module: every case runs against it."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from eve.cli.agent_setup import prepare
from eve.execution.setup import AgentSetup
from tests.conftest import REPO_ROOT


def copy_example(root: Path) -> Path:
    shutil.copytree(
        REPO_ROOT / "agent", root / "agent", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(
        REPO_ROOT / ".eve",
        root / ".eve",
        ignore=shutil.ignore_patterns("sessions", "evals", "cache"),
    )
    return root


@pytest.fixture(scope="module")
def example_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_example(tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def setup(example_root: Path) -> AgentSetup:
    """The example agent without its MCP connection: a case here runs in a loop of its own,
    so each would start the units server anew (tests/connections test connections; the
    eve eval CLI tests run the whole agent, connection included)."""
    full = asyncio.run(prepare(example_root, model=None, max_turns=None, announce=False))
    return replace(full, agent=replace(full.agent, connections=[]))
