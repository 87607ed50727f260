"""``compile_agent``: discovery → import analysis → compile loads → manifest → artifact bytes.

Everything here computes; only ``compile_to_disk`` writes, and only when there are no errors,
so a failed compile leaves the last good artifacts in place.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from eve._authored import module_id_for, prepare_authored_imports
from eve._version import __version__
from eve.artifacts import AGENT_DIR, digest
from eve.authoring.agent import BUILTIN_TOOL_NAMES, AgentConfigModel, AgentDefinition
from eve.authoring.auth import AuthDefinition
from eve.authoring.channels import ChannelDefinition
from eve.authoring.connections import MCPConnection
from eve.authoring.hooks import HookDefinition
from eve.authoring.instructions import InstructionsDefinition
from eve.authoring.memory import MemoryDefinition
from eve.authoring.sandbox import SandboxDefinition
from eve.authoring.schedules import ScheduleDefinition
from eve.authoring.tools import FunctionTool, ToolDefinition
from eve.builtins.automatic import AUTOMATIC_TOOLS
from eve.compiler.bindings import (
    BUILTIN_REGISTRY,
    builtin_binding,
    builtin_source_id,
    node_bindings,
    source_id_for,
)
from eve.compiler.cache import CompileCache
from eve.compiler.channels import ChannelSource, channel_entry, check_paths
from eve.compiler.connections import connection_entry
from eve.compiler.diagnostics import DiagnosticSink
from eve.compiler.discover import Discovery, NodeFiles, discover
from eve.compiler.emit import write_artifacts
from eve.compiler.evals import read_evals
from eve.compiler.imports import ModuleGraph, analyze
from eve.compiler.instructions import AgentExport, compile_instructions, deps_entry
from eve.compiler.load import LoadFailure, find_definition, import_authored
from eve.compiler.memory import memory_entry
from eve.compiler.module_map_source import render_module_map
from eve.compiler.normalize import agent_config, hook_entry, tool_entry
from eve.compiler.output import CompiledOutput, compile_output
from eve.compiler.sandbox import inherit_sandboxes, sandbox_entry
from eve.compiler.schedules import (
    ScheduleSource,
    check_deliveries,
    markdown_schedule,
    python_schedule,
)
from eve.compiler.tool_sets import ToolSetCompiler
from eve.errors import CompileFailed
from eve.manifest import (
    DIAGNOSTICS_PATH,
    DISCOVERY_MANIFEST_PATH,
    MANIFEST_PATH,
    METADATA_PATH,
    MODULE_MAP_PATH,
    ROOT_NODE_ID,
    SCHEMA_VERSION,
    AgentNode,
    AuthEntry,
    ChannelEntry,
    CompiledManifest,
    CompileMetadata,
    ConnectionEntry,
    DiagnosticsFile,
    DynamicInstructions,
    FunctionToolEntry,
    Generator,
    HookEntry,
    MemoryEntry,
    PluginDistribution,
    ProviderToolEntry,
    SandboxEntry,
    ScheduleEntry,
    SkillEntry,
    ToolEntry,
    encode,
)

#: a manifest entry that says where a definition is (``AuthEntry``, ``DynamicInstructions``)
E = TypeVar("E")


@dataclass(frozen=True, kw_only=True)
class CompileResult:
    discovery: Discovery
    diagnostics: DiagnosticSink
    manifest: CompiledManifest | None
    #: app-root-relative path → bytes, empty when there were errors
    artifacts: dict[str, bytes]


def source_fingerprint(
    sources: dict[str, str], plugins: list[PluginDistribution] | None = None
) -> str:
    """One hash over every source path and content hash, the artifact schema version and the
    plugins (entry point, distribution, version) whose tool sets the compile used."""
    used = [[p.entry_point, p.distribution, p.version] for p in plugins or []]
    blob = msgspec.json.encode(
        {"schema_version": SCHEMA_VERSION, "sources": sorted(sources.items()), "plugins": used}
    )
    return "sha256:" + hashlib.sha256(blob).hexdigest()


class _NodeCompiler:
    def __init__(
        self,
        discovery: Discovery,
        graph: ModuleGraph,
        sink: DiagnosticSink,
        cache: CompileCache | None,
    ) -> None:
        self.cache = cache
        self.discovery = discovery
        self.graph = graph
        self.sink = sink
        self.app_root = discovery.app_root
        self.tool_sets = ToolSetCompiler(sink)
        #: by node id: where agent.py's definition is, for a node with a deps factory
        self.deps_exports: dict[str, AgentExport] = {}

    def failure(self, failure: LoadFailure, node_id: str) -> None:
        self.sink.error(
            failure.code,
            failure.message,
            source_path=failure.path,
            line=failure.line,
            node_id=node_id,
        )

    def load(self, path: str, expected: type, node_id: str) -> tuple[object, str, bool] | None:
        try:
            module = import_authored(module_id_for(path), path, self.app_root)
            found = find_definition(module, expected, path)
        except LoadFailure as failure:
            self.failure(failure, node_id)
            return None
        return found.value, found.export_name, found.factory

    def config(self, node: NodeFiles) -> AgentConfigModel:
        config = AgentConfigModel()
        if node.agent_module is not None:
            loaded = self.load(node.agent_module, AgentDefinition, node.node_id)
            if loaded is not None and isinstance(loaded[0], AgentDefinition):
                config = loaded[0].config
                if config.deps is not None:
                    export = AgentExport(export_name=loaded[1], factory=loaded[2])
                    self.deps_exports[node.node_id] = export
        if node.node_id != ROOT_NODE_ID and node.agent_module and not config.description:
            self.sink.error(
                "compile/subagent-description-missing",
                f"subagent '{node.node_id}' needs define_agent(description=...): the parent "
                "model reads it to decide when to delegate",
                source_path=node.agent_module,
                node_id=node.node_id,
            )
        if node.node_id == ROOT_NODE_ID and config.runtime_config:
            self.sink.error(
                "compile/runtime-config-on-root",
                "runtime_config configures a subagent at each call; the root agent is not "
                "called by anyone, so give it a model in define_agent instead",
                source_path=node.agent_module,
                node_id=node.node_id,
            )
        return config

    def tool(self, node: NodeFiles, name: str, path: str) -> ToolEntry | None:
        loaded = self.load(path, ToolDefinition, node.node_id)
        if loaded is None:
            return None
        definition, export_name, factory = loaded
        assert isinstance(definition, ToolDefinition)
        try:
            entry = tool_entry(
                definition,
                name=name,
                logical_path=path,
                source_id=source_id_for(path, node.root, AGENT_DIR),
                export_name=export_name,
                factory=factory,
                cache=self.cache,
            )
        except LoadFailure as failure:
            self.failure(failure, node.node_id)
            return None
        if isinstance(entry, FunctionToolEntry):
            self.lint_state(path, node.node_id)
        if isinstance(definition, FunctionTool):
            self.lint_function_name(definition, name, path, node.node_id)
        return entry

    def lint_function_name(
        self, definition: FunctionTool, name: str, path: str, node_id: str
    ) -> None:
        """The model calls a tool by its file's name: a ``@tool`` function named otherwise
        reads as a tool it is not (a renamed file, a copied tool)."""
        function = definition.function_name
        if function is None or function == name or function == name.rsplit("-", 1)[-1]:
            return
        self.sink.warning(
            "compile/tool-name-mismatch",
            f"@tool function `{function}` is the tool `{name}` (the model calls a tool by its "
            f"file's name); rename the function or the file so they agree",
            source_path=path,
            line=definition.function_line,
            node_id=node_id,
        )

    def lint_provider_tools(
        self, config: AgentConfigModel, tools: list[ToolEntry], node_id: str
    ) -> None:
        """A provider tool runs only at its own provider: a model of the chain from another
        is never offered it, which must not pass in silence (``web_search`` of Anthropic
        for an ``openai/`` fallback)."""
        chain = [m for m in (config.model, *config.fallback) if m is not None]
        for entry in tools:
            if not isinstance(entry, ProviderToolEntry):
                continue
            owner = entry.provider.provider
            for model in (m for m in chain if m.partition("/")[0] != owner):
                self.sink.warning(
                    "compile/provider-tool-unsupported",
                    f"`{entry.name}` is a tool {owner} runs itself, and {model} (in this "
                    f"agent's models) is not {owner}'s: steps it answers are not offered "
                    f"`{entry.name}`; give it a function tool instead, or drop {model}",
                    source_path=entry.logical_path,
                    node_id=node_id,
                )

    def hook(self, node: NodeFiles, name: str, path: str) -> HookEntry | None:
        loaded = self.load(path, HookDefinition, node.node_id)
        if loaded is None:
            return None
        definition, export_name, factory = loaded
        assert isinstance(definition, HookDefinition)
        self.lint_state(path, node.node_id, where="hook")
        return hook_entry(
            definition,
            name=name,
            logical_path=path,
            source_id=source_id_for(path, node.root, AGENT_DIR),
            export_name=export_name,
            factory=factory,
        )

    def declared(
        self, node: NodeFiles, path: str | None, expected: type, entry: Callable[..., E]
    ) -> E | None:
        """Where the one ``expected`` definition of the file at ``path`` is, for the runtime
        to load again (``auth.py``, ``instructions.py``); None without the file, or after
        the diagnostic of a file that gives no such definition."""
        loaded = None if path is None else self.load(path, expected, node.node_id)
        if path is None or loaded is None:
            return None
        _, export_name, factory = loaded
        return entry(
            logical_path=path,
            source_id=source_id_for(path, node.root, AGENT_DIR),
            export_name=export_name,
            factory=factory,
        )

    def auth(self, node: NodeFiles) -> AuthEntry | None:
        return self.declared(node, node.auth_module, AuthDefinition, AuthEntry)

    def connection(self, node: NodeFiles, name: str, path: str) -> ConnectionEntry | None:
        loaded = self.load(path, MCPConnection, node.node_id)
        if loaded is None:
            return None
        definition, export_name, factory = loaded
        assert isinstance(definition, MCPConnection)
        return connection_entry(
            definition,
            name=name,
            logical_path=path,
            source_id=source_id_for(path, node.root, AGENT_DIR),
            export_name=export_name,
            factory=factory,
        )

    def channels(self, node: NodeFiles) -> list[ChannelEntry]:
        """The node's channels (discovery finds them at the root only), their paths checked
        against eve's routes and each other."""
        entries: list[ChannelEntry] = []
        lines: dict[str, int | None] = {}
        for name, path in node.channels:
            loaded = self.load(path, ChannelDefinition, node.node_id)
            if loaded is None:
                continue
            definition, export_name, factory = loaded
            assert isinstance(definition, ChannelDefinition)
            source = ChannelSource(
                name=name,
                logical_path=path,
                source_id=source_id_for(path, node.root, AGENT_DIR),
                export_name=export_name,
                factory=factory,
            )
            entry = channel_entry(definition, source, self.sink)
            if entry is not None:
                entries.append(entry)
                lines[name] = definition.line
        check_paths(entries, lines, self.sink)
        return entries

    def schedule(self, node: NodeFiles, name: str, path: str) -> ScheduleEntry | None:
        source = ScheduleSource(
            name=name, logical_path=path, source_id=source_id_for(path, node.root, AGENT_DIR)
        )
        if path.endswith(".md"):
            return markdown_schedule(self.app_root, source, self.sink)
        loaded = self.load(path, ScheduleDefinition, node.node_id)
        if loaded is None:
            return None
        definition, export_name, factory = loaded
        assert isinstance(definition, ScheduleDefinition)
        return python_schedule(
            definition, source, self.sink, export_name=export_name, factory=factory
        )

    def memory(self, node: NodeFiles, name: str, path: str) -> MemoryEntry | None:
        loaded = self.load(path, MemoryDefinition, node.node_id)
        if loaded is None:
            return None
        definition, export_name, _ = loaded
        assert isinstance(definition, MemoryDefinition)
        source_id = source_id_for(path, node.root, AGENT_DIR)
        return memory_entry(
            definition, name=name, logical_path=path, source_id=source_id, export_name=export_name
        )

    def sandbox(self, node: NodeFiles) -> SandboxEntry | None:
        if node.sandbox is None:
            return None
        loaded = self.load(node.sandbox, SandboxDefinition, node.node_id)
        if loaded is None:
            return None
        definition = loaded[0]
        assert isinstance(definition, SandboxDefinition)
        return sandbox_entry(
            definition,
            logical_path=node.sandbox,
            workspace_files=node.sandbox_workspace,
            app_root=self.app_root,
            sink=self.sink,
            node_id=node.node_id,
        )

    def builtin(self, node: NodeFiles, name: str) -> ToolEntry | None:
        if any(tool_name == name for tool_name, _ in node.tools):
            self.sink.error(
                "compile/slot-collision",
                f"tools/{name}.py and the built-in tool '{name}' (builtin_tools in agent.py) "
                "share a name; rename the file or drop the built-in",
                source_path=node.agent_module,
                node_id=node.node_id,
            )
            return None
        module = importlib.import_module(f"{BUILTIN_REGISTRY}.{name}")
        found = find_definition(module, ToolDefinition, f"eve built-in {name}")
        assert isinstance(found.value, ToolDefinition)
        return tool_entry(
            found.value,
            name=name,
            logical_path="",
            source_id=builtin_source_id(name),
            export_name=found.export_name,
            factory=found.factory,
        )

    def lint_state(self, path: str, node_id: str, *, where: str = "tool") -> None:
        module = self.graph.modules.get(path)
        for mutation in module.mutations if module else []:
            self.sink.warning(
                "compile/module-state-mutation",
                f"`{mutation.name}` is module-level state changed inside the {where} "
                f"({mutation.how}); one process serves every session, so all of them share "
                "it. Keep per-session values in eve.context.define_state(...)",
                source_path=path,
                line=mutation.line,
                node_id=node_id,
            )

    def node(self, node: NodeFiles) -> AgentNode:
        config = self.config(node)
        tools = [e for name, path in node.tools if (e := self.tool(node, name, path)) is not None]
        builtins = [e for n in config.builtin_tools if (e := self.builtin(node, n)) is not None]
        hooks = [h for name, path in node.hooks if (h := self.hook(node, name, path)) is not None]
        connections = [
            c for name, path in node.connections if (c := self.connection(node, name, path))
        ]
        channels = self.channels(node)
        schedules = [s for name, path in node.schedules if (s := self.schedule(node, name, path))]
        check_deliveries(schedules, channels, self.sink)
        memory = [m for name, path in node.memory if (m := self.memory(node, name, path))]
        sets = self.tool_sets.node(
            sorted(set(config.tool_sets)),
            taken=self.taken_names(node),
            where={"source_path": node.agent_module, "node_id": node.node_id},
        )
        provided = builtins + sets.tools
        self.lint_provider_tools(config, tools + provided, node.node_id)
        auth = self.auth(node)
        compile_reads = {path for _, path in node.tools} | {path for _, path in node.hooks}
        # a connection's module is read again at run time: its get_token and approval
        # policies are functions the manifest cannot hold
        compile_reads |= {path for _, path in node.connections}
        # a channel's module is read for its declaration; a define_channel's again at run
        # time, for its handler
        compile_reads |= {path for _, path in node.channels}
        # a memory slot is data: read once here, never imported at run time
        compile_reads |= {path for _, path in node.memory}
        # so is a sandbox: its seed files are copied at run time, its module never imported
        if node.sandbox:
            compile_reads.add(node.sandbox)
        if node.agent_module:
            compile_reads.add(node.agent_module)
        if node.dynamic_instructions:
            # read for its definition, called at each turn
            compile_reads.add(node.dynamic_instructions)
        runtime_roots = {e.logical_path for e in tools if not isinstance(e, ProviderToolEntry)} | {
            e.logical_path for e in hooks
        }
        runtime_roots |= {c.logical_path for c in connections}
        runtime_roots |= {c.logical_path for c in channels if c.has_handler}
        # a .py schedule is read for its cron, and again at each tick for its run(ctx)
        python_schedules = {path for _, path in node.schedules if path.endswith(".py")}
        compile_reads |= python_schedules
        runtime_roots |= {s.logical_path for s in schedules if s.has_run}
        if auth is not None:
            # the server calls it on every request its own schemes do not accept
            compile_reads.add(auth.logical_path)
            runtime_roots.add(auth.logical_path)
        output = self.output(node, config)
        if output is not None and output.runtime_root is not None:
            runtime_roots.add(output.runtime_root)
        deps = deps_entry(node, self.deps_exports.get(node.node_id))
        if deps is not None:
            runtime_roots.add(deps.logical_path)  # the factory is taken from its define_agent
        if node.dynamic_instructions:
            runtime_roots.add(node.dynamic_instructions)
        bindings = node_bindings(
            graph=self.graph,
            sources=self.discovery.sources,
            node_root=node.root,
            agent_root=AGENT_DIR,
            compile_reads=compile_reads,
            runtime_roots=runtime_roots,
            sink=self.sink,
            node_id=node.node_id,
        )
        bindings.update({e.source_id: builtin_binding(e.name) for e in builtins})
        bindings.update(sets.bindings)
        return AgentNode(
            node_id=node.node_id,
            root=node.root,
            config=agent_config(config, output=output.output if output else None, deps=deps),
            instructions=compile_instructions(
                self.app_root,
                node,
                self.declared(
                    node, node.dynamic_instructions, InstructionsDefinition, DynamicInstructions
                ),
            ),
            tools=tools + provided,
            skills=[
                SkillEntry(
                    name=skill.name,
                    description=skill.description,
                    logical_path=skill.path,
                    source_id=source_id_for(skill.path, node.root, AGENT_DIR),
                )
                for skill in node.skills
            ],
            hooks=hooks,
            connections=connections,
            channels=channels,
            schedules=schedules,
            memory=memory,
            sandbox=self.sandbox(node),
            subagents=node.subagents,
            auth=auth,
            compile_loads=sorted(
                source_id_for(path, node.root, AGENT_DIR) for path in compile_reads
            )
            + [e.source_id for e in provided],
            runtime_roots=sorted(
                source_id_for(path, node.root, AGENT_DIR) for path in runtime_roots
            )
            + [e.source_id for e in provided if bindings[e.source_id].usage.runtime_entry],
            bindings=bindings,
        )

    def output(self, node: NodeFiles, config: AgentConfigModel) -> CompiledOutput | None:
        if config.output_schema is None or node.agent_module is None:
            return None
        try:
            return compile_output(
                config.output_schema,
                retries=config.output_retries,
                agent_module=node.agent_module,
                sources=self.discovery.sources,
                source_id_of=lambda path: source_id_for(path, node.root, AGENT_DIR),
            )
        except LoadFailure as failure:
            self.failure(failure, node.node_id)
            return None

    def taken_names(self, node: NodeFiles) -> dict[str, str]:
        """Tool names a plugin tool set cannot take in this node, and what holds each."""
        taken = {name: f"the built-in tool '{name}'" for name in BUILTIN_TOOL_NAMES}
        taken.update({name: f"the built-in tool '{name}'" for name in AUTOMATIC_TOOLS})
        taken.update(
            {child.rsplit("/", 1)[-1]: f"the subagent '{child}'" for child in node.subagents}
        )
        taken.update({name: f"the authored tool {path}" for name, path in node.tools})
        return taken


def _check_cycles(graph: ModuleGraph, sink: DiagnosticSink) -> None:
    cycle = graph.find_cycle()
    if cycle:
        sink.error(
            "compile/import-cycle",
            f'Compiled module dependency cycle includes "{cycle[0]}": '
            + " → ".join(cycle)
            + ". Move what both need into a third module under lib/",
            source_path=cycle[0],
        )


def compile_agent(app_root: Path | str, *, cache: CompileCache | None = None) -> CompileResult:
    """Compile ``app_root/agent`` in memory; errors are in ``diagnostics``, never raised.

    ``cache`` lets unchanged sources and schemas skip their work (see ``compiler.cache``).
    """
    app_root = Path(app_root)
    sink = DiagnosticSink()
    discovery = discover(app_root, sink)
    if not discovery.nodes:
        return CompileResult(discovery=discovery, diagnostics=sink, manifest=None, artifacts={})
    graph = analyze(app_root, discovery.sources, cache)
    _check_cycles(graph, sink)
    try:
        prepare_authored_imports(app_root)
    except Exception as error:
        sink.error(
            "compile/import-failed",
            f"importing agent/__init__.py failed: {type(error).__name__}: {error}",
            source_path=f"{AGENT_DIR}/__init__.py",
        )
        return CompileResult(discovery=discovery, diagnostics=sink, manifest=None, artifacts={})
    compiler = _NodeCompiler(discovery, graph, sink, cache)
    nodes = {node_id: compiler.node(files) for node_id, files in discovery.nodes.items()}
    nodes = inherit_sandboxes(nodes)
    evals = read_evals(app_root, discovery.evals, sink)
    if sink.has_errors:
        return CompileResult(discovery=discovery, diagnostics=sink, manifest=None, artifacts={})
    plugins = [compiler.tool_sets.used[name] for name in sorted(compiler.tool_sets.used)]
    manifest = CompiledManifest(
        fingerprint=source_fingerprint(discovery.sources, plugins), nodes=nodes, evals=evals
    )
    return CompileResult(
        discovery=discovery,
        diagnostics=sink,
        manifest=manifest,
        artifacts=render_artifacts(discovery, sink, manifest, plugins=plugins),
    )


def render_artifacts(
    discovery: Discovery,
    sink: DiagnosticSink,
    manifest: CompiledManifest,
    *,
    plugins: list[PluginDistribution] | None = None,
) -> dict[str, bytes]:
    artifacts = {
        DISCOVERY_MANIFEST_PATH: encode(discovery.manifest()),
        DIAGNOSTICS_PATH: encode(DiagnosticsFile(diagnostics=sink.items)),
        MANIFEST_PATH: encode(manifest),
        MODULE_MAP_PATH: render_module_map(manifest),
    }
    metadata = CompileMetadata(
        status="ready",
        generator=Generator(name="eve", version=__version__),
        fingerprint=manifest.fingerprint,
        artifacts={path: digest(data) for path, data in artifacts.items()},
        plugins=plugins or [],
    )
    artifacts[METADATA_PATH] = encode(metadata)
    return artifacts


def compile_to_disk(app_root: Path | str, *, use_cache: bool = True) -> CompileResult:
    """Compile and write the artifacts; raise ``CompileFailed`` (with diagnostics) on errors."""
    app_root = Path(app_root)
    cache = CompileCache.load(app_root) if use_cache else None
    result = compile_agent(app_root, cache=cache)
    if cache is not None:
        cache.save(app_root)
    if result.manifest is None:
        raise CompileFailed(
            f"compile failed with {result.diagnostics.count('error')} error(s)",
            diagnostics=result.diagnostics.items,
        )
    write_artifacts(app_root, result.artifacts)
    return result
