"""Framework plugins: objects registered through the ``eve.plugins`` entry-point group.

A distribution declares ``[project.entry-points."eve.plugins"] name = "module:object"``; the
object (a module or an instance) implements any hook spec with ``@eve.hooks.hookimpl``.
"""

from __future__ import annotations

import importlib.metadata

import pluggy

from eve.errors import PluginLoadError

PLUGIN_GROUP = "eve.plugins"


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
