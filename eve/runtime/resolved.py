"""The live agent: what resolving the manifest against the module map produces."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeGuard, TypeVar

import pydantic

from eve.authoring.approval import NEVER, ApprovalRule
from eve.authoring.auth import AuthDefinition
from eve.authoring.connections import MCPConnection
from eve.authoring.deps import DepsFactory
from eve.authoring.hooks import HookDefinition
from eve.authoring.instructions import Render
from eve.authoring.tools import Execute
from eve.manifest import (
    AgentConfig,
    AnyToolEntry,
    ConnectionEntry,
    FunctionToolEntry,
    HandlingKind,
    HookEntry,
    MemoryEntry,
    Output,
    ProviderToolEntry,
    SandboxEntry,
    SkillEntry,
    SubagentToolEntry,
    WorkflowToolEntry,
)
from eve.runtime.validation import InputValidator

E = TypeVar("E", bound=AnyToolEntry)


@dataclass(frozen=True, kw_only=True)
class _Resolved(Generic[E]):
    #: the declaration: what the manifest (or, for a subagent, the runtime) says
    entry: E

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def description(self) -> str:
        return self.entry.description

    @property
    def handling(self) -> HandlingKind:
        return self.entry.handling


@dataclass(frozen=True, kw_only=True)
class ResolvedFunctionTool(_Resolved[FunctionToolEntry]):
    """A tool whose live ``execute`` runs inside the step that calls it."""

    execute: Execute
    validator: InputValidator
    approval: ApprovalRule = NEVER
    to_model_output: Callable[[Any], Any] | None = None
    #: the MCP connection whose server runs it (``connections/<name>.py``), if any
    connection: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResolvedWorkflowTool(_Resolved[WorkflowToolEntry]):
    """A workflow tool: its body ``run`` is a task (``execution.tasks``)."""

    run: Execute
    validator: InputValidator
    approval: ApprovalRule = NEVER


@dataclass(frozen=True, kw_only=True)
class ResolvedSubagent(_Resolved[SubagentToolEntry]):
    """A subagent offered as a tool: a call runs a turn of its node, as a task."""

    validator: InputValidator


@dataclass(frozen=True, kw_only=True)
class ResolvedProviderTool(_Resolved[ProviderToolEntry]):
    """A tool the provider runs: a declaration only, its module never imported."""


ResolvedTool = ResolvedFunctionTool | ResolvedWorkflowTool | ResolvedSubagent | ResolvedProviderTool
"""A tool with its live parts re-attached to its declaration, one class per kind."""
#: the tools whose calls run outside the step that asks for them (``execution.tasks``)
TaskTool = ResolvedWorkflowTool | ResolvedSubagent
#: the tools eve runs itself: validated, approved, then executed or started as a task
RunnableTool = ResolvedFunctionTool | ResolvedWorkflowTool | ResolvedSubagent


def is_task(tool: ResolvedTool) -> TypeGuard[TaskTool]:
    """Whether calls of ``tool`` run as tasks: subagents and workflow tools."""
    return isinstance(tool, ResolvedWorkflowTool | ResolvedSubagent)


@dataclass(frozen=True, kw_only=True)
class ResolvedSkill:
    entry: SkillEntry

    @property
    def name(self) -> str:
        return self.entry.name


@dataclass(frozen=True, kw_only=True)
class ResolvedHook:
    """A hook's declaration with its live subscribers."""

    entry: HookEntry
    definition: HookDefinition

    @property
    def name(self) -> str:
        return self.entry.name


@dataclass(frozen=True, kw_only=True)
class ResolvedConnection:
    """An MCP connection's declaration with its live definition (``get_token``, approval
    policies); its tools are listed per turn (``runtime.connections``)."""

    entry: ConnectionEntry
    definition: MCPConnection

    @property
    def name(self) -> str:
        return self.entry.name


@dataclass(frozen=True, kw_only=True)
class ResolvedOutput:
    """A typed final answer: its declaration and, when it was given as one, the live class."""

    spec: Output
    #: the pydantic class the answer is validated into; None for a plain JSON Schema
    model: type[pydantic.BaseModel] | None = None


@dataclass(frozen=True, kw_only=True)
class ResolvedDeps:
    """The deps factory a node's turns call (``define_agent(deps=...)``)."""

    factory: DepsFactory
    #: the node whose agent.py declares it: the node itself, or the nearest caller that
    #: declares one (a subagent without a factory of its own inherits it)
    owner: str
    #: that agent.py; None for deps given in code (``agent_setup``)
    logical_path: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResolvedInstructions:
    """The dynamic part of a node's system prompt (``instructions.py``)."""

    render: Render
    #: the file it came from; None for instructions given in code (``agent_setup``)
    logical_path: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResolvedAgent:
    node_id: str
    config: AgentConfig
    instructions: str
    tools: list[ResolvedTool] = field(default_factory=list)
    skills: list[ResolvedSkill] = field(default_factory=list)
    hooks: list[ResolvedHook] = field(default_factory=list)
    #: the node's MCP servers; their tools join ``tools`` per turn (``runtime.connections``)
    connections: list[ResolvedConnection] = field(default_factory=list)
    #: the node's memory slots; their tools are bound to a store by the edge that runs
    #: turns (``eve.execution.memory.with_memory``)
    memory: list[MemoryEntry] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)
    #: where the node's commands run (``sandbox.py``, or inherited); bound to the agent's
    #: workspace by its setup (``eve.sandbox.bindings``)
    sandbox: SandboxEntry | None = None
    #: the type the final answer is validated into (``define_agent(output_schema=...)``)
    output: ResolvedOutput | None = None
    #: the custom auth hook of ``agent/auth.py`` (root only), which the server calls
    auth: AuthDefinition | None = None
    #: what builds ``ctx.deps`` at the start of each turn; None: ``ctx.deps`` is None
    deps: ResolvedDeps | None = None
    #: evaluated at the start of each turn and appended to ``instructions``
    dynamic_instructions: ResolvedInstructions | None = None

    def tool(self, name: str) -> ResolvedTool | None:
        return next((t for t in self.tools if t.name == name), None)
