"""The agent info document: what the compiled agent holds, read from the artifacts only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from eve.artifacts import check_artifacts
from eve.errors import StaleArtifacts
from eve.manifest import (
    DIAGNOSTICS_PATH,
    DISCOVERY_MANIFEST_PATH,
    MANIFEST_PATH,
    METADATA_PATH,
    MODULE_MAP_PATH,
    ROOT_NODE_ID,
    AnyToolEntry,
    AuthEntry,
    CompiledManifest,
    ContextWindow,
    DiagnosticsFile,
    FunctionToolEntry,
    HttpServer,
    ProviderToolEntry,
    SandboxEntry,
    ScheduleEntry,
    WorkflowToolEntry,
    decode,
)
from eve.runtime.automatic import automatic_entries
from eve.runtime.delegation import session_node, session_tools, subagent_entries
from eve.runtime.load import read_manifest
from eve.runtime.memory import memory_entries
from eve.runtime.resolve_dynamic import deps_owner


class ToolInfo(msgspec.Struct, kw_only=True):
    name: str
    description: str
    #: where it comes from: ``tools/x.py``, ``eve:builtins/bash``, ``plugin:<entry point>/x``
    source: str
    handling: str
    has_execute: bool
    approval: str
    deferred: bool
    input_schema: dict[str, Any] | None
    #: for a tool a subagent inherits: the path of the node that defines it ("" the root)
    inherited_from: str | None = None


class SkillInfo(msgspec.Struct, kw_only=True):
    name: str
    description: str


class HookInfo(msgspec.Struct, kw_only=True):
    name: str
    source: str
    events: list[str]


class ConnectionInfo(msgspec.Struct, kw_only=True):
    """An MCP connection as declared (``eve connections list`` shows its tools)."""

    name: str
    source: str
    description: str
    #: ``stdio`` or ``http``
    transport: str
    #: the command line or the URL
    target: str
    expose: str


class ChannelInfo(msgspec.Struct, kw_only=True):
    """One route of a channel (``agent/channels/``): a built-in kind's entry route, or
    each of a ``define_channel``'s."""

    name: str
    kind: str
    method: str
    url_path: str
    #: the file that declares it
    source: str


class ScheduleInfo(msgspec.Struct, kw_only=True):
    """A schedule (``agent/schedules/``) as declared; ``eve schedules list`` adds its runs."""

    name: str
    cron: str
    timezone: str
    catch_up: bool
    #: the long-lived session every run is a turn of, if any
    session: str | None
    #: the file that declares it
    source: str


class MemoryInfo(msgspec.Struct, kw_only=True):
    """A memory slot (``memory.py``, ``memory/<name>.py``; see docs/memory.md)."""

    name: str
    source: str
    scope: str
    #: ``database`` or ``files``
    provider: str
    search: str
    recall: int
    expose: str
    description: str


class SandboxInfo(msgspec.Struct, kw_only=True):
    """Where a node's commands run (``sandbox.py``; see docs/sandbox.md)."""

    #: the file that declares it (a parent's, for an inherited one)
    source: str
    #: ``bubblewrap`` (also when the declaration names none) or ``local``
    provider: str
    #: True for ``local``: commands run unconfined, as eve runs
    unsafe: bool
    network: bool
    allow_hosts: list[str]
    limits: dict[str, int]
    #: how many files each session's workspace starts with (``sandbox/workspace/``)
    workspace_files: int


class AuthInfo(msgspec.Struct, kw_only=True):
    """The agent's custom auth hook (``agent/auth.py``, ``define_auth``): the server asks
    it for the principal of each request its built-in schemes do not prove."""

    #: the file that declares it
    source: str
    #: ``default`` or the module-level name the definition was found under
    export_name: str


class DepsInfo(msgspec.Struct, kw_only=True):
    """The deps factory a node's turns call (``define_agent(deps=...)``)."""

    #: the agent.py whose ``define_agent`` declares it
    source: str
    #: the caller it is inherited from ("" for the root); None: the node's own
    inherited_from: str | None = None


class NodeInfo(msgspec.Struct, kw_only=True):
    #: "" for the root agent, else the subagent path (``researcher/reviewer``)
    path: str
    node_id: str
    model: str | None
    #: the models tried after ``model`` when it fails (``define_agent(model=[...])``)
    fallback: list[str] = []
    #: the context window compaction measures against (``AgentConfig.context_window``)
    context_window: ContextWindow | None
    description: str | None
    instructions_path: str | None
    tools: list[ToolInfo]
    skills: list[SkillInfo]
    hooks: list[HookInfo]
    subagents: list[str]
    connections: list[ConnectionInfo] = []
    #: the node's memory slots; their tools are among ``tools``
    memory: list[MemoryInfo] = []
    #: the JSON Schema of the typed final answer (``define_agent(output_schema=...)``)
    output_schema: dict[str, Any] | None = None
    #: ``instructions.py``, evaluated each turn and appended to ``instructions_path``'s text
    dynamic_instructions_path: str | None = None
    #: the deps factory (own or inherited); None: ``ctx.deps`` is None
    deps: DepsInfo | None = None
    #: where its commands run; None: no sandbox declared (they run as ``local`` would)
    sandbox: SandboxInfo | None = None


class DiagnosticCounts(msgspec.Struct, kw_only=True):
    errors: int
    warnings: int


class AgentInfo(msgspec.Struct, kw_only=True):
    """The stable ``eve info --json`` document (see docs/cli.md)."""

    kind: Literal["eve-agent-info"] = "eve-agent-info"
    version: int = 1
    status: Literal["fresh", "stale"]
    stale_sources: list[str]
    diagnostics: DiagnosticCounts
    agent: NodeInfo
    subagents: list[NodeInfo]
    artifacts: dict[str, str]
    #: the model a server runs the root agent with (``--model`` included); ``None`` from
    #: ``eve info``, which serves nothing
    served_model: str | None = None
    #: sources edited since the server loaded the agent (it serves what it loaded)
    served_stale_sources: list[str] = []
    #: the doors a server opens to the agent, beside the session API
    channels: list[ChannelInfo] = []
    #: the runs on a clock a server starts (``agent/schedules/``)
    schedules: list[ScheduleInfo] = []
    #: the custom auth hook, when ``agent/auth.py`` declares one
    auth: AuthInfo | None = None


def _path(node_id: str) -> str:
    return "" if node_id == ROOT_NODE_ID else node_id


def _tool_info(entry: AnyToolEntry, inherited_from: str | None = None) -> ToolInfo:
    local = entry if isinstance(entry, FunctionToolEntry | WorkflowToolEntry) else None
    return ToolInfo(
        name=entry.name,
        description=entry.description,
        source=entry.source_id,
        handling=entry.handling,
        has_execute=entry.has_execute,
        approval=local.approval.kind if local else "never",
        deferred=local.deferred if local else False,
        input_schema=None if isinstance(entry, ProviderToolEntry) else entry.input_schema,
        inherited_from=inherited_from,
    )


def _deps_info(manifest: CompiledManifest, key: str) -> DepsInfo | None:
    owner = deps_owner(manifest, key)
    entry = None if owner is None else manifest.nodes[owner].config.deps
    if owner is None or entry is None:
        return None
    inherited = None if owner == key else _path(owner)
    return DepsInfo(source=entry.logical_path, inherited_from=inherited)


def _node_info(manifest: CompiledManifest, key: str) -> NodeInfo:
    node = manifest.nodes[key]
    # as its sessions see them: own and inherited tools, subagents, then the automatic
    # built-ins (eve__search, eve__skill, eve__tool)
    scoped = session_tools(manifest, key)
    extra: list[AnyToolEntry] = [
        *subagent_entries(manifest, key),
        *memory_entries(node.memory),
        *automatic_entries(session_node(manifest, key)),
    ]
    return NodeInfo(
        path=_path(key),
        node_id=node.node_id,
        model=node.config.model,
        fallback=list(node.config.fallback),
        context_window=node.config.context_window,
        description=node.config.description,
        instructions_path=node.instructions.logical_path,
        dynamic_instructions_path=(
            node.instructions.dynamic.logical_path if node.instructions.dynamic else None
        ),
        deps=_deps_info(manifest, key),
        tools=[_tool_info(t.entry, None if t.owner == key else _path(t.owner)) for t in scoped]
        + [_tool_info(entry) for entry in extra],
        skills=[SkillInfo(name=s.name, description=s.description) for s in node.skills],
        hooks=[HookInfo(name=h.name, source=h.logical_path, events=h.events) for h in node.hooks],
        subagents=list(node.subagents),
        output_schema=node.config.output.json_schema if node.config.output is not None else None,
        connections=[
            ConnectionInfo(
                name=c.name,
                source=c.logical_path,
                description=c.description,
                transport="http" if isinstance(c.server, HttpServer) else "stdio",
                target=c.server.url
                if isinstance(c.server, HttpServer)
                else " ".join(c.server.command),
                expose=c.expose,
            )
            for c in node.connections
        ],
        memory=[
            MemoryInfo(
                name=m.name,
                source=m.logical_path,
                scope=m.scope,
                provider=m.provider.__struct_config__.tag,  # type: ignore[arg-type]
                search=m.search,
                recall=m.recall,
                expose=m.expose,
                description=m.description,
            )
            for m in node.memory
        ],
        sandbox=sandbox_info(node.sandbox),
    )


def sandbox_info(entry: SandboxEntry | None) -> SandboxInfo | None:
    if entry is None:
        return None
    provider = entry.provider or "bubblewrap"
    return SandboxInfo(
        source=entry.logical_path,
        provider=provider,
        unsafe=provider == "local",
        network=entry.network,
        allow_hosts=list(entry.allow_hosts),
        limits=msgspec.structs.asdict(entry.limits),
        workspace_files=len(entry.workspace_files),
    )


def schedule_info(entry: ScheduleEntry) -> ScheduleInfo:
    return ScheduleInfo(
        name=entry.name,
        cron=entry.cron,
        timezone=entry.timezone,
        catch_up=entry.catch_up,
        session=entry.session,
        source=entry.logical_path,
    )


def _auth_info(entry: AuthEntry | None) -> AuthInfo | None:
    if entry is None:
        return None
    return AuthInfo(source=entry.logical_path, export_name=entry.export_name)


def agent_info(root: Path) -> AgentInfo:
    """What ``eve info --json`` and ``GET /eve/v1/info`` report, from the artifacts only."""
    manifest = read_manifest(root / MANIFEST_PATH)
    report = check_artifacts(root)
    try:
        diagnostics = decode((root / DIAGNOSTICS_PATH).read_bytes(), DiagnosticsFile).diagnostics
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
        raise StaleArtifacts(
            f"{DIAGNOSTICS_PATH} is missing or unreadable ({error}): run `eve compile`"
        ) from error
    return AgentInfo(
        status="fresh" if report.fresh else "stale",
        stale_sources=sorted({*report.added, *report.removed, *report.changed}),
        diagnostics=DiagnosticCounts(
            errors=sum(d.severity == "error" for d in diagnostics),
            warnings=sum(d.severity == "warning" for d in diagnostics),
        ),
        agent=_node_info(manifest, ROOT_NODE_ID),
        subagents=[_node_info(manifest, k) for k in sorted(manifest.nodes) if k != ROOT_NODE_ID],
        channels=[
            ChannelInfo(
                name=channel.name,
                kind=channel.kind,
                method=route.method,
                url_path=route.url_path,
                source=channel.logical_path,
            )
            for channel in manifest.nodes[ROOT_NODE_ID].channels
            for route in channel.routes
        ],
        schedules=[schedule_info(s) for s in manifest.nodes[ROOT_NODE_ID].schedules],
        auth=_auth_info(manifest.nodes[ROOT_NODE_ID].auth),
        artifacts={
            "discovery_manifest": DISCOVERY_MANIFEST_PATH,
            "diagnostics": DIAGNOSTICS_PATH,
            "manifest": MANIFEST_PATH,
            "module_map": MODULE_MAP_PATH,
            "metadata": METADATA_PATH,
        },
    )
