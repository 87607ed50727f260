"""What installed framework plugins provide: model providers and tool sets, by name.

Each ``eve_*`` implementation is called on its own (not through ``pm.hook.x()``, whose merged
list forgets who returned what), so a name two plugins claim is a ``PluginConflict`` naming
both, and a malformed result is a ``PluginLoadError`` naming the plugin that returned it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pluggy

from eve.authoring.tool_sets import ToolSet
from eve.errors import PluginConflict, PluginLoadError
from eve.models.base import ModelFactory
from eve.plugins.entry_points import (
    PluginOrigin,
    entry_point_name,
    load_entry_point_plugins,
    new_plugin_manager,
    plugin_origin,
)

#: what a built-in is called when a plugin claims its name
BUILT_IN = "eve"


@dataclass(frozen=True, kw_only=True)
class ProvidedModelProvider:
    prefix: str
    factory: ModelFactory
    origin: PluginOrigin


@dataclass(frozen=True, kw_only=True)
class ProvidedToolSet:
    tool_set: ToolSet
    origin: PluginOrigin


def installed_plugins() -> pluggy.PluginManager:
    """A fresh manager holding every ``eve.plugins`` entry point (``PluginLoadError`` if one
    is broken); hook implementations of authored agents never provide anything."""
    manager = new_plugin_manager()
    load_entry_point_plugins(manager)
    return manager


def model_providers(
    manager: pluggy.PluginManager, *, reserved: Collection[str]
) -> dict[str, ProvidedModelProvider]:
    """Prefix → provider, over every plugin; ``reserved`` are the prefixes eve has built in."""
    found: dict[str, ProvidedModelProvider] = {}
    for plugin_name, result in _results(manager, "eve_model_providers"):
        origin = plugin_origin(plugin_name)
        for prefix, factory in _mapping(result, origin).items():
            if not isinstance(prefix, str) or not prefix or "/" in prefix or not callable(factory):
                raise _malformed(origin, "eve_model_providers", "prefix (no '/') → factory")
            holder = BUILT_IN if prefix in reserved else found.get(prefix)
            if holder is not None:
                raise _conflict("model provider", prefix, holder, origin)
            found[prefix] = ProvidedModelProvider(prefix=prefix, factory=factory, origin=origin)
    return found


def tool_sets(manager: pluggy.PluginManager) -> dict[str, ProvidedToolSet]:
    """Tool set name → set, over every plugin."""
    found: dict[str, ProvidedToolSet] = {}
    for plugin_name, result in _results(manager, "eve_tool_sets"):
        origin = plugin_origin(plugin_name)
        if not isinstance(result, Sequence) or not all(isinstance(s, ToolSet) for s in result):
            raise _malformed(origin, "eve_tool_sets", "a list of eve.tools.ToolSet")
        for tool_set in result:
            if tool_set.name in found:
                raise _conflict("tool set", tool_set.name, found[tool_set.name], origin)
            found[tool_set.name] = ProvidedToolSet(tool_set=tool_set, origin=origin)
    return found


def _results(manager: pluggy.PluginManager, spec: str) -> list[tuple[str, Any]]:
    caller: pluggy.HookCaller = getattr(manager.hook, spec)
    results: list[tuple[str, Any]] = []
    # registration order (pluggy keeps the reverse), so the first plugin keeps a name
    for impl in caller.get_hookimpls():
        try:
            results.append((impl.plugin_name, impl.function()))
        except Exception as error:
            name = entry_point_name(impl.plugin_name)
            raise PluginLoadError(
                f"the eve.plugins entry point {name!r} failed in {spec}(): "
                f"{type(error).__name__}: {error}; fix or uninstall the plugin",
                plugin=name,
            ) from error
    return results


def _mapping(result: object, origin: PluginOrigin) -> Mapping[Any, Any]:
    if not isinstance(result, Mapping):
        raise _malformed(origin, "eve_model_providers", "prefix (no '/') → factory")
    return result


def _malformed(origin: PluginOrigin, spec: str, wanted: str) -> PluginLoadError:
    return PluginLoadError(
        f"the eve.plugins entry point {origin.entry_point!r} ({origin.distribution}) returned "
        f"something other than {wanted} from {spec}(); fix or uninstall the plugin",
        plugin=origin.entry_point,
    )


def _conflict(
    kind: str, name: str, holder: str | ProvidedModelProvider | ProvidedToolSet, by: PluginOrigin
) -> PluginConflict:
    first = holder if isinstance(holder, str) else holder.origin.entry_point
    owner = "built into eve" if first == BUILT_IN else f"provided by the plugin {first!r}"
    return PluginConflict(
        f"the eve.plugins entry point {by.entry_point!r} ({by.distribution}) provides the "
        f"{kind} {name!r}, which is {owner}; uninstall one of them or ask its author to "
        "rename it",
        plugin=by.entry_point,
        kind=kind,
        name=name,
        plugins=[first, by.entry_point],
    )
