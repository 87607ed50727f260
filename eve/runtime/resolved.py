"""The live agent: what resolving the manifest against the module map produces."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eve.authoring.approval import ApprovalRule
from eve.authoring.hooks import HookDefinition
from eve.authoring.tools import Execute
from eve.manifest import AgentConfig, HandlingKind, HookEntry, SkillEntry, ToolEntry
from eve.runtime.validation import InputValidator


@dataclass(frozen=True, kw_only=True)
class ResolvedTool:
    """A tool with its live parts re-attached to its declaration.

    ``execute`` is ``None`` for provider tools (the provider runs them) and, by design, for
    tasks: workflow tools, whose body is ``workflow``, and subagents, which the loop hands
    to its task runner (in a durable session, a child workflow).
    """

    entry: ToolEntry
    execute: Execute | None
    validator: InputValidator | None
    approval: ApprovalRule
    to_model_output: Callable[[Any], Any] | None = None
    workflow: Execute | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def description(self) -> str:
        return self.entry.description

    @property
    def handling(self) -> HandlingKind:
        return self.entry.behavior.handling.kind

    @property
    def is_task(self) -> bool:
        """Run outside the step that calls it (``execution.tasks``): subagents, workflow tools."""
        return self.handling in ("subagent", "workflow-tool")


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
class ResolvedAgent:
    node_id: str
    config: AgentConfig
    instructions: str
    tools: list[ResolvedTool] = field(default_factory=list)
    skills: list[ResolvedSkill] = field(default_factory=list)
    hooks: list[ResolvedHook] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)

    def tool(self, name: str) -> ResolvedTool | None:
        return next((t for t in self.tools if t.name == name), None)
