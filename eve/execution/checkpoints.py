"""The seam durability plugs into: every model response and tool outcome passes a recorder.

The loop asks the recorder for each step's model response and each call's outcome, handing
it a function that produces the value. ``Inline`` just calls it. A durable recorder runs
the function as a checkpointed step the first time and, on recovery, returns the recorded
value without calling it: the model is not asked again and the tool does not run twice.
Values are msgspec Structs so any recorder can store them as JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import msgspec

from eve.execution.tool_calls import CallOutcome
from eve.messages import ToolCall
from eve.models.events import StopReason, TokenUsage


class ModelResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One step's complete model response."""

    text: str
    tool_calls: list[ToolCall]
    finish_reason: StopReason
    usage: TokenUsage


class StepRecorder(Protocol):
    async def model_response(
        self, step: int, produce: Callable[[], Awaitable[ModelResponse]]
    ) -> ModelResponse: ...

    async def tool_outcome(
        self, step: int, call: ToolCall, produce: Callable[[], Awaitable[CallOutcome]]
    ) -> CallOutcome: ...


class Inline:
    """No durability: produce every value now."""

    async def model_response(
        self, step: int, produce: Callable[[], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await produce()

    async def tool_outcome(
        self, step: int, call: ToolCall, produce: Callable[[], Awaitable[CallOutcome]]
    ) -> CallOutcome:
        return await produce()
