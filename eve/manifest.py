"""The artifact contract: the msgspec types both the compiler and the runtime import.

Every JSON file under ``.eve/`` is one of the top-level Structs here, with a ``kind`` and a
``schema_version``. The compiler writes them, the runtime reads them, and neither imports the
other. Paths inside are relative to the app root, so artifacts are relocatable, and encoding
is canonical (sorted keys, 2-space indent, trailing newline) so the same sources give the same
bytes in any directory. Every Struct forbids unknown fields, so any change to the format
bumps ``SCHEMA_VERSION``: readers check it first and refuse another version with
``ManifestVersionError`` ("compile with this eve") rather than misreading the file.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

SCHEMA_VERSION = 15
ROOT_NODE_ID = "__root__"

# Where each artifact lives, relative to the app root.
DISCOVERY_MANIFEST_PATH = ".eve/discovery/agent-discovery-manifest.json"
DIAGNOSTICS_PATH = ".eve/discovery/diagnostics.json"
MANIFEST_PATH = ".eve/compile/compiled-agent-manifest.json"
MODULE_MAP_PATH = ".eve/compile/module_map.py"
METADATA_PATH = ".eve/compile/compile-metadata.json"

__all__ = [
    "DIAGNOSTICS_PATH",
    "DISCOVERY_MANIFEST_PATH",
    "MANIFEST_PATH",
    "METADATA_PATH",
    "MODULE_MAP_PATH",
    "ROOT_NODE_ID",
    "SCHEMA_VERSION",
    "AgentConfig",
    "AgentNode",
    "AnyToolEntry",
    "Approval",
    "ApprovalKind",
    "AuthEntry",
    "Backing",
    "Base",
    "ChannelDelivery",
    "ChannelEntry",
    "ChannelRouteEntry",
    "Compaction",
    "CompileMetadata",
    "CompiledManifest",
    "ConnectionEntry",
    "ContextWindow",
    "DatabaseMemoryProvider",
    "Deps",
    "Diagnostic",
    "DiagnosticsFile",
    "DiscoveredNode",
    "DiscoveryManifest",
    "DynamicInstructions",
    "EnvHeader",
    "EvalCaseDeclaration",
    "EvalDeclaration",
    "FileMemoryProvider",
    "FilesystemBacking",
    "FunctionToolEntry",
    "Generator",
    "HandlingKind",
    "HookEntry",
    "HttpServer",
    "IdentityProviderSettings",
    "Instructions",
    "Limits",
    "McpServer",
    "MemoryEntry",
    "MemoryProviderEntry",
    "ModelPrice",
    "ModelSettings",
    "ModuleBinding",
    "OAuthSettings",
    "OpenAIApi",
    "Output",
    "OutputType",
    "Owner",
    "PluginDistribution",
    "ProgrammaticBacking",
    "PromptCache",
    "ProviderToolEntry",
    "ProviderToolSpec",
    "ReasoningLevel",
    "Retries",
    "RunnableToolEntry",
    "SandboxEntry",
    "SandboxLimitsEntry",
    "ScheduleEntry",
    "SchemaSource",
    "Severity",
    "SkillEntry",
    "SourceFile",
    "StdioServer",
    "SubagentToolEntry",
    "ThinkingMode",
    "ToolEntry",
    "Usage",
    "WebhookDelivery",
    "WorkflowToolEntry",
    "decode",
    "encode",
]

ReasoningLevel = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
Severity = Literal["error", "warning"]
#: how the loop runs a tool: the tag of its entry (``subagent`` is never compiled)
HandlingKind = Literal["dispatch", "provider-tool", "workflow-tool", "subagent"]
ApprovalKind = Literal["never", "always", "once", "policy"]
SchemaSource = Literal["pydantic", "json-schema"]


class Base(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Shared settings of every artifact type."""


# --- module bindings -----------------------------------------------------------------------


class Usage(Base, frozen=True, kw_only=True):
    """When a module is needed: read by the compiler, importable at run time, or both."""

    compile: bool
    runtime_entry: bool


class FilesystemBacking(Base, frozen=True, kw_only=True, tag="filesystem", tag_field="kind"):
    """A module authored as a file under the app root."""

    module_id: str
    #: source ids of the authored modules this one imports (its direct dependencies)
    dependencies: list[str] = []


class ProgrammaticBacking(Base, frozen=True, kw_only=True, tag="programmatic", tag_field="kind"):
    """A module the framework or a plugin provides (a built-in tool, a plugin's tool set)."""

    registry_id: str
    module_id: str
    dependencies: list[str] = []


Backing = FilesystemBacking | ProgrammaticBacking


class Owner(Base, frozen=True, kw_only=True):
    """Who a module belongs to."""

    kind: Literal["application", "framework", "extension"]


class ModuleBinding(Base, frozen=True, kw_only=True):
    """One module an agent node needs, keyed by ``source_id`` in ``AgentNode.bindings``."""

    source_id: str
    #: path under the app root (``agent/tools/get_weather.py``); empty for framework modules
    logical_path: str
    backing: Backing
    owner: Owner
    usage: Usage
    #: sha256 of the module's bytes ("" for framework modules)
    fingerprint: str = ""


# --- tools, skills, instructions -----------------------------------------------------------


class Approval(Base, frozen=True, kw_only=True):
    """Normalized approval rule: ``policy`` means a function of the input decides."""

    kind: ApprovalKind


class ProviderToolSpec(Base, frozen=True, kw_only=True):
    """What the model provider needs to run a provider-executed tool."""

    provider: str
    type: str
    config: dict[str, Any] = {}


class _Tool(Base, frozen=True, kw_only=True, tag_field="kind"):
    """What every tool entry holds; ``kind`` (the tag) says how the loop runs it."""

    name: str
    description: str
    logical_path: str
    source_id: str
    #: ``default`` or the module-level name the definition was found under
    export_name: str = "default"
    #: ``default`` was a factory, evaluated again at resolve time
    factory: bool = False
    available_in_subagents: bool = True

    @property
    def handling(self) -> HandlingKind:
        """How the loop runs it: the entry's tag (``dispatch``, ``workflow-tool`` …)."""
        kind: HandlingKind = self.__struct_config__.tag  # type: ignore[assignment]
        return kind

    def __post_init__(self) -> None:
        _checked_has_execute(self)


class _LocalTool(_Tool, frozen=True, kw_only=True):
    """A tool eve runs itself: the model sees its input schema; approval and deferral apply."""

    #: a local function (``execute`` or a workflow tool's ``run``) exists, and the runtime
    #: re-attaches it from the module map; always true here (``_checked_has_execute``)
    has_execute: bool = True

    #: the JSON Schema sent to the model
    input_schema: dict[str, Any]
    #: where the input schema came from; the resolver prefers a live pydantic model
    schema_source: SchemaSource = "json-schema"
    output_schema: dict[str, Any] | None = None
    approval: Approval = Approval(kind="never")
    deferred: bool = False


class FunctionToolEntry(_LocalTool, frozen=True, kw_only=True, tag="dispatch"):
    """A tool whose ``execute(input, ctx)`` runs inside the step that calls it."""

    has_model_output_projection: bool = False
    ends_turn: bool = False
    #: characters of its result the model reads, over the agent's
    #: ``limits.max_tool_output_chars``; None: the agent's
    max_output_chars: int | None = None
    #: its calls may run beside the other calls of their step (``define_tool(parallel=)``)
    parallel: bool = True


class WorkflowToolEntry(_LocalTool, frozen=True, kw_only=True, tag="workflow-tool"):
    """A tool whose ``run(input, ctx)`` runs as a task (a child workflow when durable)."""


class ProviderToolEntry(_Tool, frozen=True, kw_only=True, tag="provider-tool"):
    """A tool the model provider runs; eve declares it and never imports its module."""

    provider: ProviderToolSpec
    #: never: the provider runs it (``_checked_has_execute``)
    has_execute: bool = False


class SubagentToolEntry(_Tool, frozen=True, kw_only=True, tag="subagent"):
    """A direct subagent as its caller's model sees it. Never compiled: the runtime derives
    it from the subagent's node (``runtime.delegation``)."""

    input_schema: dict[str, Any]
    #: the node the call runs (``researcher``, ``researcher/reviewer``)
    node_id: str
    #: always: the runtime runs the subagent's loop (``_checked_has_execute``)
    has_execute: bool = True


#: what ``has_execute`` says for each kind, as the TypeScript eve's ``hasExecute``: a local
#: function, a workflow tool's run and a subagent's loop execute here; a provider tool never
_HAS_EXECUTE: dict[HandlingKind, bool] = {
    "dispatch": True,
    "workflow-tool": True,
    "subagent": True,
    "provider-tool": False,
}


def _checked_has_execute(entry: _Tool) -> None:
    """A tool entry's ``has_execute`` is its kind's: a manifest saying otherwise is refused."""
    expected = _HAS_EXECUTE[entry.handling]
    if getattr(entry, "has_execute", expected) != expected:
        raise ValueError(f"a {entry.handling} tool has has_execute {str(expected).lower()}")


#: a compiled tool: what ``AgentNode.tools`` holds
ToolEntry = FunctionToolEntry | WorkflowToolEntry | ProviderToolEntry
#: any tool a session may have, subagents included
AnyToolEntry = FunctionToolEntry | WorkflowToolEntry | ProviderToolEntry | SubagentToolEntry
#: the tools eve runs (the model calls them by their input schema)
RunnableToolEntry = FunctionToolEntry | WorkflowToolEntry | SubagentToolEntry


class SkillEntry(Base, frozen=True, kw_only=True):
    """A skill's metadata; its body is read on demand from ``logical_path``."""

    name: str
    description: str
    logical_path: str
    source_id: str


class HookEntry(Base, frozen=True, kw_only=True):
    """A hook as declared: which events its module subscribes to."""

    #: the file name under ``hooks/`` without ``.py``
    name: str
    logical_path: str
    source_id: str
    #: ``default`` or the module-level name the definition was found under
    export_name: str
    #: ``default`` was a factory, evaluated again at resolve time
    factory: bool = False
    #: the event types subscribed to, in the order the definition lists them
    events: list[str]


class AuthEntry(Base, frozen=True, kw_only=True):
    """The root agent's custom auth hook (``agent/auth.py``, ``define_auth``)."""

    logical_path: str
    source_id: str
    #: ``default`` or the module-level name the definition was found under
    export_name: str
    #: ``default`` was a factory, evaluated again at resolve time
    factory: bool = False


class DynamicInstructions(Base, frozen=True, kw_only=True):
    """A node's ``instructions.py``: the ``define_instructions`` function evaluated at the
    start of each turn, its result appended to the static text."""

    logical_path: str
    source_id: str
    export_name: str = "default"
    #: ``default`` was a factory, evaluated again at resolve time
    factory: bool = False


class Instructions(Base, frozen=True, kw_only=True):
    """The always-on system prompt of a node."""

    #: the node's instructions.md (None without one)
    logical_path: str | None
    #: instructions.md's text: the static part of the prompt
    text: str
    #: instructions.py, whose result each turn follows ``text``; None without one
    dynamic: DynamicInstructions | None = None


# --- MCP connections -----------------------------------------------------------------------


class EnvHeader(Base, frozen=True, kw_only=True):
    """A value read from an environment variable when connecting (never the value itself)."""

    env: str
    prefix: str = ""


class IdentityProviderSettings(Base, frozen=True, kw_only=True):
    """The enterprise IdP of an ``identity_assertion`` grant (``identity_provider(...)``):
    where the ID token is exchanged for an ID-JAG; no token, only where it is read from."""

    token_endpoint: str
    client_id: str
    client_secret: EnvHeader | None = None
    id_token: EnvHeader | None = None
    id_token_file: str | None = None


class OAuthSettings(Base, frozen=True, kw_only=True):
    """How a Streamable HTTP connection signs in with OAuth 2.1 (``oauth(...)``): no token
    and no secret, only the names of variables holding them."""

    #: the scopes asked for first (None: what the server's challenge or metadata names)
    scopes: list[str] | None = None
    #: a client registered beforehand (None: dynamic client registration)
    client_id: str | None = None
    client_secret: EnvHeader | None = None
    redirect_url: str | None = None
    client_name: str = "eve"
    #: a client ID metadata document's URL (SEP-991), used instead of registering
    client_metadata_url: str | None = None
    authorization_timeout_seconds: float = 300.0
    #: the grant: a person signs in (authorization code), or the client itself
    #: authenticates with no one in the loop (client credentials, RFC 6749 §4.4)
    grant: Literal["authorization_code", "client_credentials", "identity_assertion"] = (
        "authorization_code"
    )
    #: client credentials with a signed JWT (RFC 7523 §2.2) instead of a secret: the PEM
    #: private key from the environment, or from a file read when connecting
    private_key: EnvHeader | None = None
    private_key_file: str | None = None
    signing_algorithm: str = "RS256"
    #: the authorization server the client's credentials belong to (its issuer): they are
    #: sent to no other (None: the one the MCP server's metadata names)
    issuer: str | None = None
    #: an ``identity_assertion`` grant's IdP (SEP-990)
    identity_provider: IdentityProviderSettings | None = None


class HttpServer(Base, frozen=True, kw_only=True, tag="http", tag_field="transport"):
    """A server reached over Streamable HTTP."""

    url: str
    #: header name → where its value comes from
    headers: dict[str, EnvHeader] = {}
    #: a ``get_token`` callable gives ``Authorization: Bearer …`` (re-attached at run time)
    has_token: bool = False
    #: OAuth 2.1 sign-in (``eve.connections.oauth_client``); None: none
    oauth: OAuthSettings | None = None


class StdioServer(Base, frozen=True, kw_only=True, tag="stdio", tag_field="transport"):
    """A server eve starts as a process and talks to over its stdin and stdout."""

    command: list[str]
    #: literal values, or ``EnvHeader`` for one read from eve's environment
    env: dict[str, str | EnvHeader] = {}
    cwd: str | None = None


McpServer = HttpServer | StdioServer


class ConnectionEntry(Base, frozen=True, kw_only=True):
    """An MCP server a node reaches (``connections/<name>.py``): a declaration only; the
    server's tools are listed at run time."""

    #: the file name without ``.py``; the server's tools are ``<name>__<tool>``
    name: str
    description: str
    logical_path: str
    source_id: str
    export_name: str = "default"
    factory: bool = False
    server: McpServer
    #: the server tools allowed (None: all) and blocked
    allow_tools: list[str] | None = None
    block_tools: list[str] = []
    approval: Approval = Approval(kind="never")
    #: approval rules by the server's tool name, replacing ``approval``
    approval_by_tool: dict[str, Approval] = {}
    expose: Literal["catalog", "tools"] = "catalog"
    connect_timeout_seconds: float = 10.0
    call_timeout_seconds: float = 30.0
    #: whether the server may use the agent's model: ``never``, ``ask`` (a person allows
    #: each request) or ``always``; and the most tokens one answer may use
    sampling: Literal["never", "ask", "always"] = "never"
    sampling_max_tokens: int = 1024


# --- channels ------------------------------------------------------------------------------


class ChannelRouteEntry(Base, frozen=True, kw_only=True):
    """One route a channel answers: a method and a URL path."""

    method: str
    #: the full URL path below the app's mount point (``/channels/hooks/{session_id}``)
    url_path: str


class ChannelEntry(Base, frozen=True, kw_only=True):
    """A door to the agent (``channels/<name>.py``, root only): a declaration the server
    mounts; a ``define_channel``'s handler is re-attached from the module map."""

    #: the file name without ``.py``
    name: str
    #: a key of ``eve.channels.kinds.KIND_MODULES`` (``ai_sdk``, ``a2a``, ``custom`` …)
    kind: str
    #: where its routes live, without a trailing slash; the channel owns every path below
    url_path: str
    #: a ``define_channel``'s own routes; a built-in kind's entry (``POST`` at its path,
    #: its other routes below it are the kind's, see docs/channels/<kind>.md)
    routes: list[ChannelRouteEntry]
    logical_path: str
    source_id: str
    export_name: str = "default"
    factory: bool = False
    #: the kind's options as written: plain data, the names of variables, never secrets
    options: dict[str, Any] = {}
    #: a handler function exists (``define_channel``), re-attached at resolve time
    has_handler: bool = False


# --- schedules -----------------------------------------------------------------------------


class WebhookDelivery(Base, frozen=True, kw_only=True, tag="webhook", tag_field="kind"):
    """POST the run's answer to the URL an environment variable holds (a URL often carries
    a token, so the manifest names the variable, never the URL)."""

    url_env: str
    #: the variable holding the Standard Webhooks secret (``whsec_…``) each POST is signed
    #: with; None: unsigned
    secret_env: str | None = None


class ChannelDelivery(Base, frozen=True, kw_only=True, tag="channel", tag_field="kind"):
    """Post the run's answer through a channel of ``agent/channels/`` whose kind can speak
    first (``slack``): a new message in the conversation ``to``, a thread that continues the
    run's session (docs/schedules.md, Delivery)."""

    #: the channel's name (its file under ``channels/``, without ``.py``)
    channel: str
    #: the conversation the message starts in (a Slack channel id, ``C0123ABC``)
    to: str


class ScheduleEntry(Base, frozen=True, kw_only=True):
    """A run of the agent on a clock (``schedules/<name>.md`` or ``.py``, root only)."""

    #: the path under ``schedules/`` without its suffix (``reports/daily``)
    name: str
    logical_path: str
    source_id: str
    #: five fields (minute first) or six (seconds first), checked at compile time
    cron: str
    #: the IANA zone the cron reads its fields in
    timezone: str = "UTC"
    #: a tick missed while every worker was down: run the latest one once (True) or skip
    catch_up: bool = False
    #: the name of one long-lived session each run is a turn of; None: a new session a run
    session: str | None = None
    #: the prompt of a ``.md`` schedule (its body); None for a ``.py`` one
    prompt: str | None = None
    #: a ``.py`` schedule's ``run(ctx)``, re-attached from the module map
    has_run: bool = False
    export_name: str = "default"
    factory: bool = False
    #: where the run's answer goes once its turn ends, if anywhere
    deliver: WebhookDelivery | ChannelDelivery | None = None


# --- sandbox -------------------------------------------------------------------------------


class SandboxLimitsEntry(Base, frozen=True, kw_only=True):
    """``SandboxLimits``: what one command may use (``eve.authoring.sandbox``)."""

    cpu_seconds: int
    memory_mb: int
    processes: int
    file_size_mb: int
    wall_seconds: int
    workspace_mb: int


class SandboxEntry(Base, frozen=True, kw_only=True):
    """A node's sandbox (``sandbox.py``, or its parent's): a declaration only; the runtime
    runs commands through the provider it names (``eve.sandbox``)."""

    #: None: bubblewrap, refused at start where bwrap is missing
    provider: Literal["bubblewrap", "local"] | None = None
    network: bool = False
    allow_hosts: list[str] = []
    limits: SandboxLimitsEntry
    #: the files of ``sandbox/workspace/`` (app-root-relative, sorted): each session's
    #: workspace starts as a copy of them
    workspace_files: list[str] = []
    #: the ``sandbox.py`` that declares it (a parent's, when inherited)
    logical_path: str


# --- memory --------------------------------------------------------------------------------


class DatabaseMemoryProvider(Base, frozen=True, kw_only=True, tag="database", tag_field="kind"):
    """Entries in the session database (``eve_memories``), searched with its full-text index."""


class FileMemoryProvider(Base, frozen=True, kw_only=True, tag="files", tag_field="kind"):
    """Entries as JSON files under ``directory`` (relative to the app root)."""

    directory: str


MemoryProviderEntry = DatabaseMemoryProvider | FileMemoryProvider


class MemoryEntry(Base, frozen=True, kw_only=True):
    """A memory slot (``memory.py`` or ``memory/<name>.py``): a declaration only; its tools
    are eve's (``eve.runtime.memory``), bound to the provider's store at run time."""

    #: ``memory`` for ``memory.py``, else the file name without ``.py``
    name: str
    description: str
    scope: Literal["session", "principal", "agent"]
    provider: MemoryProviderEntry
    search: Literal["keyword", "semantic"] = "keyword"
    #: entries put into the prompt at the start of each turn (0: none)
    recall: int = 0
    expose: Literal["tools", "catalog"] = "tools"
    #: who the agent is among others sharing a database; None: the app root's name
    namespace: str | None = None
    logical_path: str
    source_id: str
    export_name: str = "default"


# --- agent config --------------------------------------------------------------------------


class ModelPrice(Base, frozen=True, kw_only=True):
    """A price the author declares for a model (USD per million tokens): for a model the
    price table does not know (a local or self-hosted one), so cost limits can bound it."""

    input_per_mtok: float
    output_per_mtok: float
    #: cached input read back; None: priced as input
    cache_read_per_mtok: float | None = None
    #: input written to the cache; None: priced as input
    cache_write_per_mtok: float | None = None


class Limits(Base, frozen=True, kw_only=True):
    max_turns: int | None = None
    max_input_tokens_per_session: int | None = None
    max_output_tokens_per_session: int | None = None
    #: USD; the priced part of the session's cost counts (an unpriced model's share is unknown)
    max_cost_usd_per_session: float | None = None
    session_timeout_seconds: float | None = None
    #: characters of one tool result the model reads (a tool's ``max_output_chars`` comes
    #: first); None: 100,000, or fewer for a small window (``eve.execution.tool_output``)
    max_tool_output_chars: int | None = None


class Compaction(Base, frozen=True, kw_only=True):
    threshold_percent: int = 80
    model: str | None = None
    #: the summary prompt, replacing eve's (``eve.execution.compaction.INSTRUCTIONS``)
    instructions: str | None = None


class ContextWindow(Base, frozen=True, kw_only=True):
    """The context window a node's model has, as the compiler found it."""

    tokens: int
    #: the most tokens one response may have, when the table knows it
    max_output_tokens: int | None = None
    #: ``model-table`` (eve's table of known models) or ``model_context_window_tokens``
    source: Literal["model-table", "model_context_window_tokens"]


class PromptCache(Base, frozen=True, kw_only=True):
    enabled: bool = True
    ttl: Literal["5m", "1h"] = "5m"


class Retries(Base, frozen=True, kw_only=True):
    attempts: int = 4
    max_delay_seconds: float = 30.0


class ModelSettings(Base, frozen=True, kw_only=True):
    """How the model samples (``define_agent(model_settings=...)``); unset: the provider's
    default. Each adapter passes these as its API's own parameters."""

    temperature: float | None = None
    #: the most tokens one response may have; unset, eve asks for 4096
    max_output_tokens: int | None = None
    top_p: float | None = None
    stop_sequences: list[str] = []
    seed: int | None = None
    #: more fields of the provider's request body (the SDKs' ``extra_body``)
    extra: dict[str, Any] = {}


class OutputType(Base, frozen=True, kw_only=True):
    """Where the class of a typed answer lives: a module binding of the node (marked
    ``runtime_entry``) and the class's name in it."""

    source_id: str
    #: the class's qualified name in that module (``Verdict``)
    qualname: str


class Output(Base, frozen=True, kw_only=True):
    """A typed final answer (``define_agent(output_schema=...)``)."""

    #: the JSON Schema of the answer, an object (the final-answer tool's input schema)
    json_schema: dict[str, Any]
    #: where the pydantic class is, re-attached at resolve time; None for a JSON Schema
    type: OutputType | None = None
    #: how many invalid answers are shown to the model to fix before the turn fails
    retries: int = 2


class Deps(Base, frozen=True, kw_only=True):
    """Where a node's ``define_agent(deps=factory)`` is: its agent.py (a runtime root of the
    node), whose definition the runtime loads again to take the live factory from."""

    logical_path: str
    source_id: str
    export_name: str = "default"
    factory: bool = False


ThinkingMode = Literal["auto", "adaptive", "budget"]
OpenAIApi = Literal["auto", "responses", "chat-completions"]


class AgentConfig(Base, frozen=True, kw_only=True):
    """The normalized ``define_agent`` call of a node."""

    model: str | None = None
    #: the models tried after ``model``, in order, when it fails past its retries or is down
    fallback: list[str] = []
    #: prices the author declares, by model id; they replace the price table's
    model_prices: dict[str, ModelPrice] = {}
    description: str | None = None
    reasoning: ReasoningLevel | None = None
    limits: Limits = Limits()
    compaction: Compaction | None = None
    model_context_window_tokens: int | None = None
    #: the window compaction measures against; None for a model without a known window
    context_window: ContextWindow | None = None
    builtin_tools: list[str] = []
    #: names of the plugin tool sets the node opted in to, sorted
    tool_sets: list[str] = []
    workspace: str | None = None
    database_url_env: str | None = None
    #: a subagent configured at each call: the name of the context key it is read from
    runtime_config: str | None = None
    prompt_cache: PromptCache = PromptCache()
    retries: Retries = Retries()
    thinking: ThinkingMode = "auto"
    openai_api: OpenAIApi = "auto"
    #: the calls of one step run concurrently (``define_agent(parallel_tools=)``)
    parallel_tools: bool = True
    #: the type the final answer is validated into, if any
    output: Output | None = None
    model_settings: ModelSettings = ModelSettings()
    #: the node's own deps factory (a subagent without one inherits its caller's at resolve
    #: time); None without one
    deps: Deps | None = None


class AgentNode(Base, frozen=True, kw_only=True):
    """One agent scope: the root or a subagent, with its own tools and module bindings."""

    node_id: str
    #: the node's directory under the app root (``agent``, ``agent/subagents/researcher``)
    root: str
    config: AgentConfig
    instructions: Instructions
    tools: list[ToolEntry] = []
    skills: list[SkillEntry] = []
    hooks: list[HookEntry] = []
    #: the MCP servers of the node, in discovery order
    connections: list[ConnectionEntry] = []
    #: the channels the server mounts (the root's only), in discovery order
    channels: list[ChannelEntry] = []
    #: the schedules (the root's only), in discovery order
    schedules: list[ScheduleEntry] = []
    #: the node's memory slots, in discovery order
    memory: list[MemoryEntry] = []
    #: where the node's commands run (``sandbox.py``); None: no sandbox declared
    sandbox: SandboxEntry | None = None
    #: node ids of direct subagents, in discovery order
    subagents: list[str] = []
    #: the custom auth hook, on the root node only
    auth: AuthEntry | None = None
    #: source ids the compiler imported to read a definition
    compile_loads: list[str] = []
    #: source ids the runtime imports directly (their closures are in ``bindings``)
    runtime_roots: list[str] = []
    bindings: dict[str, ModuleBinding] = {}


class EvalCaseDeclaration(Base, frozen=True, kw_only=True):
    """One case of an eval, as its file declares it."""

    name: str
    #: the line of its ``Case(...)`` in the eval file
    line: int


class EvalDeclaration(Base, frozen=True, kw_only=True):
    """One ``agent/evals/<name>.py``, read without importing it (only ``eve eval`` does)."""

    #: the file name without ``.py``: what ``eve eval NAME`` selects
    name: str
    logical_path: str
    #: the line of its ``define_eval(...)``
    line: int
    #: the model its cases run on when given as a literal (``offline/script:…``), else None
    model: str | None = None
    cases: list[EvalCaseDeclaration] = []


class CompiledManifest(Base, frozen=True, kw_only=True):
    """``.eve/compile/compiled-agent-manifest.json``."""

    kind: Literal["eve-agent-compiled-manifest"] = "eve-agent-compiled-manifest"
    schema_version: int = SCHEMA_VERSION
    #: the agent directory under the app root
    agent_root: str = "agent"
    #: hash of every source path and content; the module map carries the same value
    fingerprint: str
    nodes: dict[str, AgentNode]
    #: the evals under ``agent/evals/``, in file order (never loaded by the runtime)
    evals: list[EvalDeclaration] = []


# --- discovery -----------------------------------------------------------------------------


class Diagnostic(Base, frozen=True, kw_only=True):
    """One finding of discovery or compilation."""

    code: str
    severity: Severity
    message: str
    #: app-root-relative path of the file concerned, if any
    source_path: str | None = None
    line: int | None = None
    node_id: str | None = None


class DiscoveredNode(Base, frozen=True, kw_only=True):
    """What the filesystem walk found for one node, before any import."""

    node_id: str
    root: str
    agent_module: str | None
    instructions: str | None
    #: the node's instructions.py, when it has one
    dynamic_instructions: str | None = None
    auth_module: str | None = None
    tools: list[str] = []
    skills: list[str] = []
    hooks: list[str] = []
    connections: list[str] = []
    channels: list[str] = []
    schedules: list[str] = []
    memory: list[str] = []
    #: ``sandbox.py``, if the node has one
    sandbox: str | None = None
    #: the files under ``sandbox/workspace/``, sorted
    sandbox_workspace: list[str] = []
    subagents: list[str] = []


class SourceFile(Base, frozen=True, kw_only=True):
    path: str
    sha256: str


class DiscoveryManifest(Base, frozen=True, kw_only=True):
    """``.eve/discovery/agent-discovery-manifest.json``."""

    kind: Literal["eve-agent-discovery-manifest"] = "eve-agent-discovery-manifest"
    schema_version: int = SCHEMA_VERSION
    agent_root: str = "agent"
    nodes: dict[str, DiscoveredNode]
    #: the eval files under ``agent/evals/``, in file order
    evals: list[str] = []
    #: every authored file with its content hash, sorted by path: what ``--check`` compares
    sources: list[SourceFile]


class DiagnosticsFile(Base, frozen=True, kw_only=True):
    """``.eve/discovery/diagnostics.json``."""

    kind: Literal["eve-compiler-diagnostics"] = "eve-compiler-diagnostics"
    schema_version: int = SCHEMA_VERSION
    diagnostics: list[Diagnostic]


class Generator(Base, frozen=True, kw_only=True):
    name: str
    version: str


class PluginDistribution(Base, frozen=True, kw_only=True):
    """An installed plugin whose tool sets a compile used: a new version makes it stale."""

    entry_point: str
    distribution: str
    version: str


class CompileMetadata(Base, frozen=True, kw_only=True):
    """``.eve/compile/compile-metadata.json``: what was compiled from what."""

    kind: Literal["eve-compile-metadata"] = "eve-compile-metadata"
    schema_version: int = SCHEMA_VERSION
    status: Literal["ready", "failed"]
    generator: Generator
    fingerprint: str
    #: sha256 of each other artifact's bytes, by app-root-relative path
    artifacts: dict[str, str]
    #: the plugins the tool sets came from, by entry point; the fingerprint covers them
    plugins: list[PluginDistribution] = []


# --- encoding ------------------------------------------------------------------------------

T = TypeVar("T")


def encode(value: msgspec.Struct) -> bytes:
    """Canonical JSON: sorted keys, 2-space indent, trailing newline."""
    return msgspec.json.format(msgspec.json.encode(value, order="sorted"), indent=2) + b"\n"


def decode(data: bytes, kind: type[T]) -> T:
    """Decode and validate one artifact, raising ``msgspec.ValidationError`` with a JSON path."""
    return msgspec.json.decode(data, type=kind)
