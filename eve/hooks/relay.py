"""``HookRelay``: the pluggy plugin manager of one agent, and how events reach its hooks.

Authored hooks and framework plugins are registered on one ``pluggy.PluginManager("eve")``,
which validates them against ``eve.hooks.specs`` and orders them (pluggy calls the last
registered first, ``tryfirst``/``trylast`` respected); the relay registers so that authored
hooks run in manifest (alphabetical) order, then framework plugins. It calls each
implementation itself rather than through ``pm.hook.x(...)`` so that a hook that raises is
reported and the others still run: pluggy's own call loop stops at the first exception.
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pluggy

from eve._redact import redact
from eve.authoring.hooks import Subscriber
from eve.events import HookFailedData, SessionEvent
from eve.execution.events import EventEmitter
from eve.hooks import specs
from eve.plugins.entry_points import load_entry_point_plugins, new_plugin_manager
from eve.runtime.resolved import ResolvedHook

log = logging.getLogger("eve.hooks")


@dataclass(frozen=True, kw_only=True)
class _Origin:
    #: what ``hook.failed`` calls it: the hook's name, or ``eve.plugins:<entry point>``
    label: str
    #: where its code is: the hook's file under the app root, or the plugin's object
    source: str


class _AuthoredPlugin:
    """A ``define_hook`` as a pluggy plugin: one ``@hookimpl`` method per subscribed event."""

    def __init__(self, hook: ResolvedHook) -> None:
        for event, subscriber in hook.definition.events.items():
            setattr(self, specs.SPEC_NAMES[event], _implementation(subscriber))


def _implementation(subscriber: Subscriber) -> Any:
    def implementation(event: SessionEvent) -> Any:
        return subscriber(event)

    return specs.hookimpl(implementation)


class HookRelay:
    """Dispatches the hook events of a session to every registered implementation."""

    def __init__(self, manager: pluggy.PluginManager | None = None) -> None:
        self.manager = manager or new_plugin_manager()
        self._origins: dict[str, _Origin] = {}

    @classmethod
    def for_hooks(cls, hooks: Sequence[ResolvedHook], *, plugins: bool = True) -> HookRelay:
        """A relay for an agent's hooks and, with ``plugins``, the ``eve.plugins`` entry points.

        Raises ``PluginLoadError`` when an entry point cannot be loaded.
        """
        relay = cls()
        if plugins:
            for name in load_entry_point_plugins(relay.manager):
                relay._origins[name] = _Origin(label=name, source=_where(relay.manager, name))
        # pluggy calls the latest registered first: register backwards to call in manifest order
        for hook in reversed(hooks):
            relay.register_hook(hook)
        return relay

    def register_hook(self, hook: ResolvedHook) -> None:
        name = hook.entry.logical_path or hook.entry.source_id
        self.manager.register(_AuthoredPlugin(hook), name=name)
        self._origins[name] = _Origin(label=hook.name, source=name)

    def register_plugin(self, plugin: object, *, name: str) -> None:
        """Register a framework plugin object directly (what an entry point would give).

        Like every pluggy registration, it runs before what was registered earlier.
        """
        self.manager.register(plugin, name=name)
        self._origins[name] = _Origin(label=name, source=_where(self.manager, name))

    def implementations(self, event_type: str) -> list[pluggy.HookImpl]:
        """The implementations an event of ``event_type`` reaches, in call order."""
        name = specs.SPEC_NAMES.get(event_type)
        if name is None:
            return []
        caller: pluggy.HookCaller = getattr(self.manager.hook, name)
        impls = reversed(caller.get_hookimpls())
        # wrappers exist to wrap a call chain; hooks only observe, so they have none to wrap
        return [i for i in impls if not (i.hookwrapper or i.wrapper)]

    async def dispatch(self, event: SessionEvent, emitter: EventEmitter) -> None:
        """Call every implementation of the event's spec in order, awaiting async ones.

        A failure is logged with the hook's source path and published as ``hook.failed``;
        the next implementation runs regardless.
        """
        for impl in self.implementations(event.type):
            try:
                outcome = impl.function(*(event for _ in impl.argnames))
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as error:
                await self._failed(impl.plugin_name, event, error, emitter)

    async def _failed(
        self, plugin_name: str, event: SessionEvent, error: Exception, emitter: EventEmitter
    ) -> None:
        origin = self._origins.get(plugin_name) or _Origin(label=plugin_name, source=plugin_name)
        summary = redact(f"{type(error).__name__}: {error}")
        log.error(
            "hook %s (%s) failed on %s: %s\n%s",
            origin.label,
            origin.source,
            event.type,
            summary,
            redact("".join(traceback.format_exception(error)).rstrip()),
        )
        await emitter.emit(
            HookFailedData(
                turn_id=event.data.turn_id,
                step_index=event.data.step_index,
                hook=origin.label,
                source=origin.source,
                event=event.type,
                error=summary,
            )
        )


def _where(manager: pluggy.PluginManager, name: str) -> str:
    plugin = manager.get_plugin(name)
    module = getattr(plugin, "__name__", None) or type(plugin).__module__
    return str(module)
