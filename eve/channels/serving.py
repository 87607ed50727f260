"""The channels a server mounts, from the compiled manifest: declarations with their
handlers re-attached from the module map (a ``define_channel``'s, as a tool's execute)."""

from __future__ import annotations

from eve.authoring.channels import ChannelDefinition
from eve.channels.declaration import ChannelDeclaration
from eve.manifest import ROOT_NODE_ID, ChannelEntry
from eve.runtime import CompiledAgent
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap


async def _declaration(entry: ChannelEntry, module_map: ModuleMap) -> ChannelDeclaration:
    handler = None
    if entry.has_handler:
        definition = await load_definition(
            entry, module_map, ROOT_NODE_ID, kind="channel", definition_type=ChannelDefinition
        )
        handler = definition.handler
    return ChannelDeclaration(
        name=entry.name,
        kind=entry.kind,
        path=entry.url_path,
        options=entry.options,
        handler=handler,
    )


async def channel_declarations(compiled: CompiledAgent) -> list[ChannelDeclaration]:
    """Every channel of ``agent/channels/``, ready for ``create_app(..., channels=...)``.
    Only a ``define_channel``'s module is imported (for its handler); a built-in kind's
    declaration is data, and its kind's module loads when the app mounts it."""
    root = compiled.manifest.nodes[ROOT_NODE_ID]
    return [await _declaration(entry, compiled.module_map) for entry in root.channels]


def channel_lines(channels: list[ChannelDeclaration], base_url: str) -> list[str]:
    """What a server prints of its channels once it listens: one line each, with its URL."""
    return [f"channel {c.name} ({c.kind}) · {base_url.rstrip('/')}{c.path}" for c in channels]
