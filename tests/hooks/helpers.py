"""Hooks without files: a definition bound to the manifest entry the compiler would write."""

from __future__ import annotations

from eve.authoring.hooks import HookDefinition
from eve.compiler.normalize import hook_entry
from eve.runtime.resolved import ResolvedHook


def live_hook(name: str, definition: HookDefinition) -> ResolvedHook:
    entry = hook_entry(
        definition,
        name=name,
        logical_path=f"agent/hooks/{name}.py",
        source_id=f"hooks/{name}.py",
        export_name="default",
        factory=False,
    )
    return ResolvedHook(entry=entry, definition=definition)
