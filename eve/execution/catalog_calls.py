"""Catalog calls in the loop: an ``eve__tool`` call runs as the entry it names.

The model reaches a deferred tool by calling ``eve__tool`` with ``{name, input}``. Before
the call is admitted, the loop rewrites it into a call *of that tool*, with the same call
id. From then on it is that tool's call like any other: validated against its schema,
approved by its rule (a person is asked about ``gift_wrap``, not about ``eve__tool``), run
with its name in ``ToolContext.tool_name`` and reported under its name in
``actions.requested``, ``action.result`` and the tool result message. The history keeps the
model's own call, so the result still answers the call id the model used. A call that names
nothing runnable is left as it is, and ``eve__tool``'s execute explains what to do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import assert_never

from eve.builtins.automatic import AUTOMATIC_TOOLS, CALL_TOOL, SKILL_TOOL
from eve.events import ActionRequest
from eve.execution.tool_calls import CallOutcome
from eve.messages import ToolCall
from eve.runtime.resolved import (
    ResolvedFunctionTool,
    ResolvedProviderTool,
    ResolvedSubagent,
    ResolvedTool,
    ResolvedWorkflowTool,
)

_KEYS = frozenset({"name", "input"})


def as_entry(call: ToolCall, tools: Mapping[str, ResolvedTool]) -> ToolCall:
    """The call an ``eve__tool`` call stands for; every other call as it is."""
    if call.name != CALL_TOOL or CALL_TOOL not in tools:
        return call
    name, data = call.input.get("name"), call.input.get("input", {})
    # left as it is, a malformed call fails eve__tool's own validation and an unknown name
    # gets eve__tool's answer; both say what to do
    if not isinstance(name, str) or not isinstance(data, dict) or not set(call.input) <= _KEYS:
        return call
    if name not in tools or name in AUTOMATIC_TOOLS:
        return call
    return ToolCall(id=call.id, name=name, input=data)


def as_entries(calls: Sequence[ToolCall], tools: Mapping[str, ResolvedTool]) -> list[ToolCall]:
    return [as_entry(call, tools) for call in calls]


def requested(
    call: ToolCall, runs_as: ToolCall, tools: Mapping[str, ResolvedTool]
) -> ActionRequest:
    """One action of ``actions.requested``: the call as it runs, ``via`` when the model
    made it through ``eve__tool``, and the MCP connection of a server's tool."""
    return ActionRequest(
        call_id=runs_as.id,
        name=runs_as.name,
        input=runs_as.input,
        via=None if runs_as is call else call.name,
        connection=connection_of(runs_as.name, tools),
    )


def connection_of(name: str, tools: Mapping[str, ResolvedTool]) -> str | None:
    """The MCP connection whose server runs the tool ``name``, if any."""
    match tools.get(name):
        case ResolvedFunctionTool(connection=connection):
            return connection
        case ResolvedWorkflowTool() | ResolvedSubagent() | ResolvedProviderTool() | None:
            return None  # only function tools are an MCP server's
        case unknown:
            assert_never(unknown)


def loaded_skill(call: ToolCall, result: CallOutcome) -> str | None:
    """The skill a call loaded, when it is a successful ``eve__skill`` call."""
    if call.name != SKILL_TOOL or result.status != "completed":
        return None
    name = call.input.get("name")
    return name if isinstance(name, str) else None
