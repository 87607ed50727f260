"""``resolve_hook_definition``: a hook declaration back to its live subscribers."""

from __future__ import annotations

from eve.authoring.hooks import HookDefinition
from eve.errors import InvalidModuleExport
from eve.manifest import HookEntry
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap
from eve.runtime.resolved import ResolvedHook


async def resolve_hook_definition(
    entry: HookEntry, module_map: ModuleMap, node_id: str | None = None
) -> ResolvedHook:
    """Import the hook's module and check it still subscribes to what was compiled."""
    definition = await load_definition(
        entry, module_map, node_id, kind="hook", definition_type=HookDefinition
    )
    if list(definition.events) != entry.events:
        raise InvalidModuleExport(
            f"{entry.logical_path} now subscribes to {', '.join(definition.events)} but was "
            f"compiled with {', '.join(entry.events)}: run `eve compile`",
            source_id=entry.source_id,
            logical_path=entry.logical_path,
        )
    return ResolvedHook(entry=entry, definition=definition)
