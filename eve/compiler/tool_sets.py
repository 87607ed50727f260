"""Plugin tool sets of a node: ``define_agent(tool_sets=...)`` → tool entries and bindings.

A set's tools compile like any tool (``tool_entry``) and bind like a built-in: the binding
names the module that defined the tool and the module-level name it is bound to, so at run
time ``resolve_agent`` imports that module through the module map and never asks the plugin.
Plugins are loaded on the first node that opts in to a set, once per compile.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from eve.authoring.tools import ToolDefinition
from eve.compiler.bindings import plugin_binding, plugin_source_id
from eve.compiler.diagnostics import DiagnosticSink
from eve.compiler.discover import TOOL_NAME
from eve.compiler.load import LoadFailure
from eve.compiler.normalize import tool_entry
from eve.errors import PluginLoadError
from eve.manifest import ModuleBinding, PluginDistribution, ProviderToolEntry, ToolEntry
from eve.plugins.provided import ProvidedToolSet, installed_plugins, tool_sets


@dataclass(kw_only=True)
class NodeToolSets:
    tools: list[ToolEntry] = field(default_factory=list)
    bindings: dict[str, ModuleBinding] = field(default_factory=dict)


class ToolSetCompiler:
    """Compiles the tool sets every node of one compile asks for."""

    def __init__(self, sink: DiagnosticSink) -> None:
        self.sink = sink
        self._installed: dict[str, ProvidedToolSet] | None = None
        #: the plugins whose sets were used, by entry point: what the fingerprint covers
        self.used: dict[str, PluginDistribution] = {}

    def installed(self, where: dict[str, str | None]) -> dict[str, ProvidedToolSet] | None:
        if self._installed is None:
            try:
                self._installed = tool_sets(installed_plugins())
            except PluginLoadError as error:
                self.sink.error("compile/plugin-load-failed", str(error), **where)
                return None
        return self._installed

    def node(
        self, names: list[str], *, taken: Mapping[str, str], where: dict[str, str | None]
    ) -> NodeToolSets:
        """The entries of the sets ``names``; ``taken`` maps tool names the node has already
        (authored, built in, subagents) to what holds them, for collision diagnostics."""
        compiled = NodeToolSets()
        installed = self.installed(where) if names else {}
        if installed is None:
            return compiled
        holders = dict(taken)
        for name in names:
            provided = installed.get(name)
            if provided is None:
                self.sink.error("compile/tool-set-unknown", _unknown(name, installed), **where)
                continue
            for entry, module_id in self.tool_set(provided, holders, where):
                compiled.tools.append(entry)
                compiled.bindings[entry.source_id] = plugin_binding(
                    source_id=entry.source_id,
                    entry_point=provided.origin.entry_point,
                    module_id=module_id,
                    runtime_entry=not isinstance(entry, ProviderToolEntry),
                )
        return compiled

    def tool_set(
        self, provided: ProvidedToolSet, holders: dict[str, str], where: dict[str, str | None]
    ) -> list[tuple[ToolEntry, str]]:
        """Each tool's entry with the module that defines it."""
        origin = provided.origin
        self.used[origin.entry_point] = PluginDistribution(
            entry_point=origin.entry_point,
            distribution=origin.distribution,
            version=origin.version,
        )
        label = f"tool set '{provided.tool_set.name}' (plugin {origin.entry_point!r})"
        entries: list[tuple[ToolEntry, str]] = []
        for definition in provided.tool_set.tools:
            bound = self.bound_name(definition, label, where)
            if bound is None:
                continue
            module_id, name = bound
            if name in holders:
                self.sink.error(
                    "compile/tool-set-collision",
                    f"the tool '{name}' of the {label} has the name of {holders[name]}; rename "
                    "yours or leave the set out of tool_sets",
                    **where,
                )
                continue
            holders[name] = f"the tool '{name}' of the {label}"
            try:
                entry = tool_entry(
                    definition,
                    name=name,
                    logical_path="",
                    source_id=plugin_source_id(origin.entry_point, name),
                    export_name=name,
                    factory=False,
                )
                entries.append((entry, module_id))
            except LoadFailure as failure:
                self.sink.error(failure.code, f"{label}, tool '{name}': {failure.message}", **where)
        return entries

    def bound_name(
        self, definition: ToolDefinition, label: str, where: dict[str, str | None]
    ) -> tuple[str, str] | None:
        """``(module, name)``: where the runtime finds the definition again."""
        module = sys.modules.get(definition.defined_in or "")
        names = sorted(
            n for n, v in vars(module or object()).items() if v is definition and n[:1] != "_"
        )
        if module is not None and len(names) == 1 and TOOL_NAME.match(names[0]):
            return module.__name__, names[0]
        found = f"bound to {', '.join(names)}" if names else "not bound to a module-level name"
        self.sink.error(
            "compile/tool-set-tool-unbound",
            f"a tool of the {label} is {found} in {definition.defined_in or 'its module'}; each "
            "must be bound to one snake_case module-level name of the module that defines it "
            "(the name is the tool's name, and how eve finds it at run time)",
            **where,
        )
        return None


def _unknown(name: str, installed: Mapping[str, ProvidedToolSet]) -> str:
    offered = ", ".join(_offer(n, s) for n, s in sorted(installed.items()))
    return (
        f"no installed plugin provides the tool set '{name}' (tool_sets in agent.py); "
        + (f"installed tool sets: {offered}" if offered else "no eve.plugins package provides any")
        + ". Install the package that provides it, or fix the name"
    )


def _offer(name: str, provided: ProvidedToolSet) -> str:
    about = f": {provided.tool_set.description}" if provided.tool_set.description else ""
    return f"'{name}' (plugin {provided.origin.entry_point!r}{about})"
