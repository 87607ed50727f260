"""The hook specifications: the one contract authored hooks and framework plugins implement.

Two kinds of spec:

* **event specs** (``EveHookSpecs``, one per event in ``HOOK_EVENTS``) take the typed event
  (``eve.events``, e.g. ``TurnCompleted``) as ``event`` and return nothing: hooks observe.
  An authored ``define_hook`` becomes a plugin with one implementation per subscribed event;
* **provider specs** (``EveProviderSpecs``, named ``eve_*``) take nothing and return what a
  framework plugin contributes: model providers, tool sets. eve calls them when it needs what
  they provide, never per event.

A framework plugin (an ``eve.plugins`` entry point) implements any of them with ``@hookimpl``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pluggy

from eve.authoring.hooks import HOOK_EVENTS
from eve.events import (
    ActionResult,
    ActionsRequested,
    SessionCompleted,
    SessionStarted,
    StepStarted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)

if TYPE_CHECKING:
    from eve.authoring.tool_sets import ToolSet
    from eve.models.base import ModelFactory

PROJECT = "eve"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


def spec_name(event_type: str) -> str:
    """``turn.completed`` → ``turn_completed``: the spec a subscriber of that event implements."""
    return event_type.replace(".", "_")


class EveHookSpecs:
    """One spec per event in ``HOOK_EVENTS``, called after the event reached the stream."""

    @hookspec
    def session_started(self, event: SessionStarted) -> None:
        """A session was created (before its first turn)."""

    @hookspec
    def turn_started(self, event: TurnStarted) -> None:
        """A turn began; ``event.data.turn_id`` names it."""

    @hookspec
    def step_started(self, event: StepStarted) -> None:
        """A model call is about to be made; ``event.data.step_index`` counts it."""

    @hookspec
    def actions_requested(self, event: ActionsRequested) -> None:
        """The model asked for tool calls: ``event.data.actions`` (call_id, name, input)."""

    @hookspec
    def action_result(self, event: ActionResult) -> None:
        """A tool call finished: ``call_id``, ``name``, ``status``, ``output``."""

    @hookspec
    def turn_completed(self, event: TurnCompleted) -> None:
        """A turn ended normally: ``stop_reason`` and ``usage``."""

    @hookspec
    def turn_failed(self, event: TurnFailed) -> None:
        """A turn ended with an error: ``error`` (redacted)."""

    @hookspec
    def session_completed(self, event: SessionCompleted) -> None:
        """A session ended (a budget ran out): ``reason``."""


class EveProviderSpecs:
    """What a framework plugin provides; each implementation's result is kept apart, so a
    name two plugins claim is reported as ``PluginConflict`` naming both."""

    @hookspec
    def eve_model_providers(self) -> Mapping[str, ModelFactory]:
        """Provider prefix → factory: ``{"acme": build}`` makes ``acme/<name>`` a model id.

        A prefix eve has built in (``anthropic``, ``openai``, ``offline``) cannot be taken.
        """
        raise NotImplementedError

    @hookspec
    def eve_tool_sets(self) -> Sequence[ToolSet]:
        """The tool sets an agent can opt in to with ``define_agent(tool_sets=(name,))``."""
        raise NotImplementedError


SPEC_NAMES: dict[str, str] = {event: spec_name(event) for event in HOOK_EVENTS}
