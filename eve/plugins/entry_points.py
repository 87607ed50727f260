"""Framework plugins: objects registered through the ``eve.plugins`` entry-point group.

A distribution declares ``[project.entry-points."eve.plugins"] name = "module:object"``; the
object (a module or an instance) implements any hook spec with ``@eve.hooks.hookimpl``.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

import pluggy

from eve.errors import PluginLoadError
from eve.hooks import specs

PLUGIN_GROUP = "eve.plugins"


@dataclass(frozen=True, kw_only=True)
class PluginOrigin:
    """Which installed distribution an entry point comes from."""

    #: the entry point's name (``acme`` of ``acme = "eve_acme.plugin"``)
    entry_point: str
    distribution: str
    version: str


def new_plugin_manager() -> pluggy.PluginManager:
    """A manager validating against every spec: the event specs and the provider specs."""
    manager = pluggy.PluginManager(specs.PROJECT)
    manager.add_hookspecs(specs.EveHookSpecs)
    manager.add_hookspecs(specs.EveProviderSpecs)
    return manager


def entry_point_name(plugin_name: str) -> str:
    """``eve.plugins:acme`` (the name a plugin is registered under) → ``acme``."""
    return plugin_name.removeprefix(f"{PLUGIN_GROUP}:")


def plugin_origin(plugin_name: str) -> PluginOrigin:
    """The distribution behind a registered entry point; ``unknown`` for one registered by
    hand (``HookRelay.register_plugin``) rather than installed."""
    name = entry_point_name(plugin_name)
    for point in importlib.metadata.entry_points(group=PLUGIN_GROUP, name=name):
        if point.dist is not None:
            return PluginOrigin(
                entry_point=name, distribution=point.dist.name, version=point.dist.version
            )
    return PluginOrigin(entry_point=name, distribution="unknown", version="unknown")


def load_entry_point_plugins(manager: pluggy.PluginManager) -> list[str]:
    """Register every ``eve.plugins`` entry point not registered yet; their names, in order.

    Raises ``PluginLoadError`` naming the entry point when one cannot be imported or does not
    match the hook specs: a broken plugin is an installation problem, not a run-time one.
    """
    loaded: list[str] = []
    for point in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP), key=_name):
        name = f"{PLUGIN_GROUP}:{point.name}"
        if manager.has_plugin(name):
            continue
        try:
            plugin = point.load()
        except Exception as error:
            raise PluginLoadError(
                f"the {PLUGIN_GROUP} entry point {point.name!r} ({point.value}) failed to "
                f"import: {type(error).__name__}: {error}; fix or uninstall the plugin",
                plugin=point.name,
            ) from error
        try:
            manager.register(plugin, name=name)
        except pluggy.PluginValidationError as error:
            raise PluginLoadError(
                f"the {PLUGIN_GROUP} entry point {point.name!r} does not match eve's hook "
                f"specs: {error}",
                plugin=point.name,
            ) from error
        loaded.append(name)
    return loaded


def _name(point: importlib.metadata.EntryPoint) -> str:
    return point.name
