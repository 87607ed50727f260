"""Lifecycle hooks: ``from eve.hooks import define_hook`` (and ``hookimpl`` for plugins).

The relay and the specs load on first use, so importing ``define_hook`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes
from eve.authoring.hooks import HOOK_EVENTS, HookDefinition, define_hook

if TYPE_CHECKING:
    from eve.hooks.relay import HookRelay
    from eve.hooks.specs import EveHookSpecs, EveProviderSpecs, hookimpl, hookspec
    from eve.plugins.entry_points import PLUGIN_GROUP

__all__ = [
    "HOOK_EVENTS",
    "PLUGIN_GROUP",
    "EveHookSpecs",
    "EveProviderSpecs",
    "HookDefinition",
    "HookRelay",
    "define_hook",
    "hookimpl",
    "hookspec",
]

_LAZY = {
    "PLUGIN_GROUP": "eve.plugins.entry_points",
    "HookRelay": "eve.hooks.relay",
    "EveHookSpecs": "eve.hooks.specs",
    "EveProviderSpecs": "eve.hooks.specs",
    "hookimpl": "eve.hooks.specs",
    "hookspec": "eve.hooks.specs",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
