"""Module bindings of a node: usage flags from compile loads and the runtime-entry closure."""

from __future__ import annotations

import posixpath

from eve._authored import module_id_for
from eve.compiler.diagnostics import DiagnosticSink
from eve.compiler.imports import ModuleGraph
from eve.manifest import FilesystemBacking, ModuleBinding, Owner, ProgrammaticBacking, Usage


def source_id_for(path: str, node_root: str, agent_root: str) -> str:
    """Stable id of a source in a node: relative to the node root, or ``@agent/…`` for a
    module of an enclosing agent (a subagent importing the root's ``lib/``)."""
    if path.startswith(node_root + "/"):
        return path[len(node_root) + 1 :]
    return "@agent/" + posixpath.relpath(path, agent_root)


def node_bindings(
    *,
    graph: ModuleGraph,
    sources: dict[str, str],
    node_root: str,
    agent_root: str,
    compile_reads: set[str],
    runtime_roots: set[str],
    sink: DiagnosticSink,
    node_id: str,
) -> dict[str, ModuleBinding]:
    """Bindings for every module the node's compile reads or runtime entries reach.

    ``compile: true`` marks modules the compiler reads for their definitions, and whatever the
    compile-only ones (``agent.py``, provider tools) import: their values live on only in the
    manifest. ``runtime_entry: true`` marks runtime roots and everything they import.
    """
    compile_only = compile_reads - runtime_roots
    compile_closure = graph.closure(compile_only) | compile_reads
    runtime_closure = graph.closure(runtime_roots)
    bindings: dict[str, ModuleBinding] = {}
    for path in sorted(compile_closure | runtime_closure):
        usage = Usage(compile=path in compile_closure, runtime_entry=path in runtime_closure)
        binding = make_binding(
            path=path,
            source_id=source_id_for(path, node_root, agent_root),
            fingerprint=sources.get(path, ""),
            dependencies=[
                source_id_for(dep, node_root, agent_root) for dep in graph.modules[path].imports
            ]
            if path in graph.modules
            else [],
            usage=usage,
            sink=sink,
            node_id=node_id,
        )
        if binding is not None:
            bindings[binding.source_id] = binding
    return bindings


def make_binding(
    *,
    path: str,
    source_id: str,
    fingerprint: str,
    dependencies: list[str],
    usage: Usage,
    sink: DiagnosticSink,
    node_id: str,
) -> ModuleBinding | None:
    """The one constructor of filesystem bindings; refuses a binding nothing uses."""
    if not (usage.compile or usage.runtime_entry):
        sink.error(
            "compile/binding-unused",
            f'Selected module binding "{source_id}" has no compile or runtime usage',
            source_path=path,
            node_id=node_id,
        )
        return None
    return ModuleBinding(
        source_id=source_id,
        logical_path=path,
        backing=FilesystemBacking(module_id=module_id_for(path), dependencies=sorted(dependencies)),
        owner=Owner(kind="application"),
        usage=usage,
        fingerprint=fingerprint,
    )


BUILTIN_REGISTRY = "eve.builtins"


def builtin_source_id(name: str) -> str:
    return f"eve:builtins/{name}"


def builtin_binding(name: str) -> ModuleBinding:
    """A framework tool module (``builtin_tools`` in agent.py): read at compile time for its
    schema and imported at run time for its execute."""
    return ModuleBinding(
        source_id=builtin_source_id(name),
        logical_path="",
        backing=ProgrammaticBacking(
            registry_id=BUILTIN_REGISTRY, module_id=f"{BUILTIN_REGISTRY}.{name}"
        ),
        owner=Owner(kind="framework"),
        usage=Usage(compile=True, runtime_entry=True),
    )


def plugin_source_id(entry_point: str, tool: str) -> str:
    return f"plugin:{entry_point}/{tool}"


def plugin_binding(
    *, source_id: str, entry_point: str, module_id: str, runtime_entry: bool
) -> ModuleBinding:
    """A module of an installed plugin holding a tool of one of its tool sets: read at compile
    time for the tool's schema and, unless the provider runs the tool, imported at run time."""
    return ModuleBinding(
        source_id=source_id,
        logical_path="",
        backing=ProgrammaticBacking(registry_id=f"eve.plugins:{entry_point}", module_id=module_id),
        owner=Owner(kind="extension"),
        usage=Usage(compile=True, runtime_entry=runtime_entry),
    )
