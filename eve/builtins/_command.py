"""What the command-running built-ins (``bash``, ``run_python``) share: the timeout they
take and how they run a program through the session's sandbox (``ctx.sandbox``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic

from eve.authoring.context import ToolContext


class CommandInput(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    timeout_seconds: float = pydantic.Field(
        default=30.0, gt=0, le=600, description="Kill the command after this many seconds."
    )


async def run_in_sandbox(argv: Sequence[str], timeout: float, ctx: ToolContext) -> dict[str, Any]:
    """``argv`` run in the call's sandbox, as the tool's result."""
    result = await ctx.sandbox.run(argv, timeout=timeout)
    return result.as_dict()
