"""The seam durability plugs into: each step of a turn is produced in checkpointable parts.

A step is one model call plus the tool calls that follow it. The loop hands the recorder a
function that produces a part of the step: the first part streams the model response and
runs its calls; it stops early only at a call that must wait for a person or that runs as
a task (a subagent, a workflow tool: see ``execution.tasks``), or that needs MCP servers'
tools not listed yet (``execution.connections``), and the part after the answer, the task's
result or the listing runs the rest. ``Inline`` just calls the function. A durable
recorder runs it as one checkpointed step the first time and, on recovery, returns the
recorded part without calling it: the model is not asked again and the tools do not run
twice. A step without approvals or tasks is therefore exactly one checkpoint. Parts are
msgspec Structs so any recorder can store them as JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, Protocol, TypeVar

import msgspec

from eve.execution.compaction import CompactionRecord, ProduceCompaction
from eve.execution.response import ModelResponse
from eve.execution.tool_calls import CallOutcome


class _Part(msgspec.Struct, frozen=True, kw_only=True, tag_field="stop"):
    """What one part of a step produced, from the call at ``first_call`` on; the tag
    (``stop``) says how the part ended."""

    #: the model's response; only the first part of a step (``first_call`` 0) has one
    response: ModelResponse | None = None
    first_call: int = 0
    #: the results of the calls this part ran or refused, in order
    outcomes: list[CallOutcome] = []

    @property
    def next_call(self) -> int:
        return self.first_call + len(self.outcomes)


class RanAll(_Part, frozen=True, kw_only=True, tag="ran-all"):
    """Every call from ``first_call`` on has its result (or the response asked for none)."""


class AsksPerson(_Part, frozen=True, kw_only=True, tag="asks-person"):
    """Stopped before ``call`` (an index into the response's calls): a person must approve
    it by ``rule`` first."""

    call: int
    rule: str


class StartsTask(_Part, frozen=True, kw_only=True, tag="starts-task"):
    """Stopped before ``call``, which runs as a task (a subagent or workflow tool), outside
    any part."""

    call: int


class NeedsListing(_Part, frozen=True, kw_only=True, tag="needs-listing"):
    """Stopped before ``call``, which needs the tools of MCP servers the turn has not listed
    yet (a catalog search, or a call of a server's tool through ``eve__tool``): the loop
    lists them between parts, as a recorded value, and the next part goes on from ``call``.
    ``announce``: the calls are not announced yet (``actions.requested`` names a server's
    tool only once it is listed), so the next part announces them first."""

    call: int
    announce: bool = False


class Aborted(_Part, frozen=True, kw_only=True, tag="aborted"):
    """The turn was cancelled before the call after the last outcome."""


StepPart = RanAll | AsksPerson | StartsTask | NeedsListing | Aborted


Produce = Callable[[], Awaitable[StepPart]]
#: a value a turn records once and reads back on recovery (the connections' tool listing)
S = TypeVar("S", bound=msgspec.Struct)


PartAfter = Literal["answered", "settled", "listed"]


def part_key(step: int, resumed: int | None = None, after: PartAfter = "answered") -> str:
    """A part's name within its turn: ``step:3``; ``step:3:answered:1`` for the part that
    goes on from call 1 once a person answered about it; ``step:3:settled:1`` for the one
    that records call 1's task result and goes on after it; ``step:3:listed:1`` for the
    one that goes on from call 1 once the MCP servers' tools are listed."""
    return f"step:{step}" if resumed is None else f"step:{step}:{after}:{resumed}"


class StepRecorder(Protocol):
    async def part(self, key: str, produce: Produce) -> StepPart:
        """The part named ``key`` (see ``part_key``): produced now, or as recorded."""
        ...

    async def compaction(self, key: str, produce: ProduceCompaction) -> CompactionRecord:
        """The compaction named ``key`` (``compaction.compaction_key``): run now, or as
        recorded (so a finished one never asks the model again)."""
        ...

    async def value(self, key: str, produce: Callable[[], Awaitable[S]], kind: type[S]) -> S:
        """The value named ``key`` of type ``kind``: produced now, or as recorded (so a
        recovered turn sees the MCP tools its first run listed, not a new listing)."""
        ...


class Inline:
    """No durability: produce every part now."""

    async def part(self, key: str, produce: Produce) -> StepPart:
        return await produce()

    async def compaction(self, key: str, produce: ProduceCompaction) -> CompactionRecord:
        return await produce()

    async def value(self, key: str, produce: Callable[[], Awaitable[S]], kind: type[S]) -> S:
        return await produce()
