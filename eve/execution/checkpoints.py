"""The seam durability plugs into: each step of a turn is produced in checkpointable parts.

A step is one model call plus the tool calls that follow it. The loop hands the recorder a
function that produces a part of the step: the first part streams the model response and
runs its calls; it stops early only at a call that must wait for a person, and the part
after the answer runs the rest. ``Inline`` just calls the function. A durable recorder runs
it as one checkpointed step the first time and, on recovery, returns the recorded part
without calling it: the model is not asked again and the tools do not run twice. A step
without approvals is therefore exactly one checkpoint. Parts are msgspec Structs so any
recorder can store them as JSON.
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


class StepPart(msgspec.Struct, frozen=True, kw_only=True):
    """What one part of a step produced, from the call at ``first_call`` on."""

    #: the model's response; only the first part of a step (``first_call`` 0) has one
    response: ModelResponse | None = None
    first_call: int = 0
    #: the results of the calls this part ran or refused, in order
    outcomes: list[CallOutcome] = []
    #: the call (an index into the response's calls) that waits for a person, and its rule
    ask: int | None = None
    ask_rule: str | None = None
    #: the turn was cancelled before the call after the last outcome
    aborted: bool = False

    @property
    def next_call(self) -> int:
        return self.first_call + len(self.outcomes)


Produce = Callable[[], Awaitable[StepPart]]


def part_key(step: int, answered: int | None) -> str:
    """A part's name within its turn: ``step:3``, or ``step:3:answered:1`` for the part that
    goes on from call 1 once a person answered about it."""
    return f"step:{step}" if answered is None else f"step:{step}:answered:{answered}"


class StepRecorder(Protocol):
    async def part(self, step: int, answered: int | None, produce: Produce) -> StepPart:
        """The part of ``step`` that starts with the model call (``answered`` None) or goes
        on from call ``answered`` after a person's answer."""
        ...


class Inline:
    """No durability: produce every part now."""

    async def part(self, step: int, answered: int | None, produce: Produce) -> StepPart:
        return await produce()
