"""Fixtures for the built-in tools: a workspace, a directory outside it and a call helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eve.authoring.context import ToolContext
from eve.authoring.tools import ToolDefinition


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory beside the workspace holding a file no tool may reach."""
    root = tmp_path_factory.mktemp("outside")
    (root / "secret.txt").write_text("top secret\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "deep.txt").write_text("deep secret\n", encoding="utf-8")
    return root


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s", call_id="c", tool_name="bash", workspace=tmp_path)


async def call(definition: ToolDefinition, ctx: ToolContext, **data: Any) -> Any:
    """Validate ``data`` with the tool's schema and run it, as the loop does."""
    assert definition.input_model is not None and definition.execute is not None
    return await definition.execute(definition.input_model.model_validate(data), ctx)
