"""The hook specifications: the one contract authored hooks and framework plugins implement.

Every spec takes the ``SessionEvent`` envelope as ``event`` and returns nothing: hooks observe.
An authored ``define_hook`` becomes a plugin with one implementation per subscribed event; a
framework plugin (an ``eve.plugins`` entry point) implements any of them with ``@hookimpl``.
"""

from __future__ import annotations

import pluggy

from eve.authoring.hooks import HOOK_EVENTS
from eve.execution.events import SessionEvent

PROJECT = "eve"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


def spec_name(event_type: str) -> str:
    """``turn.completed`` → ``turn_completed``: the spec a subscriber of that event implements."""
    return event_type.replace(".", "_")


class EveHookSpecs:
    """One spec per event in ``HOOK_EVENTS``, called after the event reached the stream."""

    @hookspec
    def session_started(self, event: SessionEvent) -> None:
        """A session was created (before its first turn)."""

    @hookspec
    def turn_started(self, event: SessionEvent) -> None:
        """A turn began; ``event.data`` has ``turn_id``."""

    @hookspec
    def step_started(self, event: SessionEvent) -> None:
        """A model call is about to be made; ``event.data`` has ``step_index``."""

    @hookspec
    def actions_requested(self, event: SessionEvent) -> None:
        """The model asked for tool calls: ``event.data["actions"]`` (call_id, name, input)."""

    @hookspec
    def action_result(self, event: SessionEvent) -> None:
        """A tool call finished: ``call_id``, ``name``, ``status``, ``output``."""

    @hookspec
    def turn_completed(self, event: SessionEvent) -> None:
        """A turn ended normally: ``stop_reason`` and ``usage``."""

    @hookspec
    def turn_failed(self, event: SessionEvent) -> None:
        """A turn ended with an error: ``error`` (redacted)."""

    @hookspec
    def session_completed(self, event: SessionEvent) -> None:
        """A session ended (a budget ran out): ``reason``."""


SPEC_NAMES: dict[str, str] = {event: spec_name(event) for event in HOOK_EVENTS}
