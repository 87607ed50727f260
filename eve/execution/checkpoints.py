"""What a step records: its parts, and the names they are recorded under.

A step is one model call plus the tool calls that follow it. It is produced in parts, each
recorded under its own key (``recording.StepRecorder``): the first part streams the model
response and runs its calls; it stops early only at calls that must wait for a person, at a
call that runs as a task (a subagent, a workflow tool: see ``execution.tasks``), at one that
needs MCP servers' tools not listed yet (``execution.connections``), or before calls that
run concurrently (``RunsBatch``: each of those is a record of its own, so a crash re-runs
only the calls that had not finished). The part after the answers, the task's result, the
listing or the batch runs the rest. A replayed part is returned as recorded: the model is
not asked again and the tools do not run twice, so a step whose calls run one at a time
(or that has one call) without approvals or tasks is exactly one record. Parts are msgspec
Structs, so any recorder can store them as JSON.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from eve.execution.recording import RecordKind
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


class PersonAsk(msgspec.Struct, frozen=True, kw_only=True):
    """A call (an index into the response's calls) a person must approve by ``rule``."""

    call: int
    rule: str


class AsksPerson(_Part, frozen=True, kw_only=True, tag="asks-person"):
    """Stopped before ``call``: it and the calls in ``asks`` after it need a person, who
    is asked about all of them in one round (``asks[0].call`` is ``call``)."""

    call: int
    asks: list[PersonAsk]


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


class RunsBatch(_Part, frozen=True, kw_only=True, tag="runs-batch"):
    """Stopped before the calls from ``next_call`` up to ``until`` (exclusive), which run
    concurrently, each recorded on its own (``call_key``); the part after them goes on from
    ``until``."""

    until: int


class Aborted(_Part, frozen=True, kw_only=True, tag="aborted"):
    """The turn was cancelled before the call after the last outcome."""


StepPart = RanAll | AsksPerson | StartsTask | NeedsListing | RunsBatch | Aborted
PARTS: RecordKind[StepPart] = RecordKind(StepPart, "a step's part")
OUTCOMES: RecordKind[CallOutcome] = RecordKind(CallOutcome, "a tool call's result")

#: what a part after the first goes on after: a person's answers, a task's result, an MCP
#: listing, or a batch of concurrent calls
PartAfter = Literal["answered", "settled", "listed", "batch"]


def part_key(step: int, resumed: int | None = None, after: PartAfter = "answered") -> str:
    """A part's name within its turn: ``step:3``; ``step:3:answered:1`` for the part that
    goes on from call 1 once a person answered about it; ``step:3:settled:1`` for the one
    that records call 1's task result and goes on after it; ``step:3:listed:1`` for the
    one that goes on from call 1 once the MCP servers' tools are listed; ``step:3:batch:4``
    for the one that goes on from call 4 after a batch of concurrent calls."""
    return f"step:{step}" if resumed is None else f"step:{step}:{after}:{resumed}"


def call_key(step: int, call: int) -> str:
    """The record of call ``call`` of step ``step`` run in a concurrent batch."""
    return f"step:{step}:call:{call}"
