"""What one case changes about the agent before it runs: its model, its stubs, its answers.

The agent itself is the one ``eve run`` resolves; a case only swaps values in copies of it
(the model client of every node, the execute of a stubbed tool), so nothing the agent's
files say is edited and cases running side by side do not see each other's changes.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.authoring.workflow import Question
from eve.evals.definition import (
    Answer,
    Approve,
    Choose,
    Deny,
    InlineScript,
    Reply,
    Stub,
)
from eve.execution.setup import AgentSetup
from eve.execution.tool_calls import ApprovalRequest
from eve.models.base import ModelClient
from eve.models.offline import OfflineScriptModel, Script, ScriptedCall, ScriptedResponse
from eve.models.registry import create_client
from eve.runtime.resolved import ResolvedFunctionTool, ResolvedTool


def _responses(replies: Any) -> list[ScriptedResponse]:
    return [
        ScriptedResponse(
            text=reply.text,
            tool_calls=[ScriptedCall(name=c.name, input=dict(c.input)) for c in reply.calls],
        )
        for reply in replies
        if isinstance(reply, Reply)
    ]


def script_model(script: InlineScript, *, label: str) -> ModelClient:
    """An offline script model replaying a case's inline replies."""
    converted: Script = (
        {node: _responses(replies) for node, replies in script.items()}
        if isinstance(script, Mapping)
        else _responses(script)
    )
    return OfflineScriptModel.replaying(converted, label=label)


def model_client(model_id: str, app_root: Path) -> ModelClient:
    return create_client(model_id, app_root=app_root, env=os.environ)


def _each_node(setup: AgentSetup, change: Callable[[AgentSetup], AgentSetup]) -> AgentSetup:
    """``setup`` and every subagent node ``change``d, the new nodes calling each other."""
    nodes: dict[str, AgentSetup] = {}
    for node_id, child in setup.subagents.items():
        nodes[node_id] = replace(change(child), subagents=nodes)
    return replace(change(setup), subagents=nodes)


def with_client(setup: AgentSetup, client: ModelClient) -> AgentSetup:
    """``setup`` with every node answering through ``client`` (as ``eve run --model``)."""
    return _each_node(setup, lambda node: replace(node, client=client))


def _stubbed(stub: Stub) -> Any:
    async def execute(data: Any, ctx: ToolContext) -> Any:
        if isinstance(data, pydantic.BaseModel):
            fields = {name: getattr(data, name) for name in type(data).model_fields}
        else:
            fields = dict(data) if isinstance(data, Mapping) else {}
        value = stub(**fields)
        return await value if inspect.isawaitable(value) else value

    return execute


def _stub_tools(tools: list[ResolvedTool], stubs: Mapping[str, Stub]) -> list[ResolvedTool]:
    return [
        replace(tool, execute=_stubbed(stubs[tool.name]))
        if isinstance(tool, ResolvedFunctionTool) and tool.name in stubs
        else tool
        for tool in tools
    ]


def stubbable(setup: AgentSetup) -> set[str]:
    """The names of the function tools a stub can replace, in any node."""
    names = {t.name for t in setup.agent.tools if isinstance(t, ResolvedFunctionTool)}
    for child in setup.subagents.values():
        names |= {t.name for t in child.agent.tools if isinstance(t, ResolvedFunctionTool)}
    return names


def with_stubs(setup: AgentSetup, stubs: Mapping[str, Stub]) -> AgentSetup:
    """``setup`` with the function tools named in ``stubs`` running their stub, in every node."""
    if not stubs:
        return setup
    return _each_node(
        setup,
        lambda node: replace(
            node, agent=replace(node.agent, tools=_stub_tools(node.agent.tools, stubs))
        ),
    )


@dataclass(kw_only=True)
class CaseAnswers:
    """A case's person: answers approvals and questions as the case says, through the same
    hooks a person at ``eve run``'s terminal answers through, and notes what it could not."""

    answers: tuple[Answer, ...]
    unanswered: list[str] = field(default_factory=list)

    async def approve(self, request: ApprovalRequest) -> bool:
        for answer in self.answers:
            if isinstance(answer, Approve | Deny) and answer.tool == request.tool_name:
                return isinstance(answer, Approve)
        self.unanswered.append(
            f"{request.tool_name} asked for approval and the case has no "
            f"Approve({request.tool_name!r}) or Deny({request.tool_name!r}); it was denied"
        )
        return False

    async def ask(self, question: Question) -> str | None:
        for answer in self.answers:
            if isinstance(answer, Choose) and answer.tool == question.tool_name:
                return answer.option
        self.unanswered.append(
            f"{question.tool_name} asked {question.question!r} ({', '.join(question.options)}) "
            f"and the case has no Choose({question.tool_name!r}, …)"
        )
        return None
