"""eve's public surface, pinned (as httpx's ``tests/test_exported_members.py`` pins its own).

The public modules are the table of docs/architecture.md, "The public surface". Each has an
explicit ``__all__``, listed here in full, so a name added to or dropped from the surface
is a change made on purpose in this file too; every name resolves. The vocabulary modules
(errors, events, manifest, messages) export every class they define, so a new error, event
or artifact Struct is public without a line here, plus the aliases and functions pinned
below. A package outside the table says in its docstring that it is internal.
"""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from tests.conftest import REPO_ROOT

ARCHITECTURE = REPO_ROOT / "docs" / "architecture.md"

#: each facade module's ``__all__``, exactly (names apart by spaces)
PINNED: dict[str, str] = {
    "eve": (
        "AgentDefinition EveError InstructionsContext RuntimeConfig TurnInfo __version__ "
        "define_agent define_hook define_instructions runtime_config_key"
    ),
    "eve.tools": (
        "ProviderTool Question ToolContext ToolDefinition ToolSet WorkflowContext define_tool "
        "define_workflow_tool provider_tool tool"
    ),
    "eve.tools.approval": "ApprovalRule Decision always never once",
    "eve.context": (
        "Codec ContextKey EveContext JSON_CODEC StateSlot active_context current_deps "
        "current_principal "
        "define_state use_context"
    ),
    "eve.hooks": (
        "EveHookSpecs EveProviderSpecs HOOK_EVENTS HookDefinition HookRelay PLUGIN_GROUP "
        "define_hook hookimpl hookspec"
    ),
    "eve.channels": (
        "ChannelDefinition ChannelHandler a2a ag_ui ai_sdk define_channel mcp openai slack"
    ),
    "eve.connections": (
        "EnvValue IdentityProvider MCPConnection OAuth ToolFilter define_mcp_connection from_env "
        "identity_provider model_tool_name oauth"
    ),
    "eve.memory": "DatabaseProvider FileProvider MemoryDefinition database define_memory files",
    "eve.schedules": "ScheduleContext ScheduleDefinition cron_problem define_schedule next_fires",
    "eve.sandbox": "CommandResult Sandbox SandboxDefinition SandboxLimits define_sandbox",
    "eve.auth": "AuthDefinition OPERATOR Principal PrincipalKind define_auth",
    "eve.evals": (
        "Answer AnswerContains AnswerEquals AnswerMatches AnswerSchema Approve Called Case CaseRun "
        "Check CheckResult Choose Deny Equals EvalDefinition Expectation InlineScript Judge "
        "LoadedEval Matcher MaxCost MaxSteps MaxTokens OutputField Reply RunOutcome Stub Subset "
        "ToolUse Trajectory Where check_judge define_eval run_case"
    ),
    "eve.testing": "TestAgent agent_for_test",
    "eve.costs": "Cost Spend TokenUsage price",
    "eve.client": (
        "APIError Accepted AsyncEveClient ClientError EveClient ServerNotTrusted ServerUnreachable "
        "SessionEvent "
        "SessionLimits SessionListEntry SessionPage SessionSummary TURN_END"
    ),
    "eve.server": "EveApp ServerOptions create_app eve_app service_for",
    "eve.cli": "main",
    "eve.execution": (
        "AgentSetup ApprovalHook ApprovalRequest EventEmitter EventSink Inline InlineTasks NoTasks "
        "RunResult StepRecorder TaskRunner TurnEnvironment agent_setup load_transcript run_agent"
    ),
    "eve.models": (
        "Done FunctionModel ModelClient ModelEvent ModelRequest OfflineScriptModel "
        "OfflineTestModel ProviderToolDeclaration ReasoningDelta TextDelta TokenUsage "
        "ToolCallDelta ToolCallEnd ToolCallStart ToolDeclaration choose_model create_client "
        "respond"
    ),
    "eve.compiler": "CompileResult compile_agent compile_to_disk",
    "eve.artifacts": "CheckReport check_artifacts",
    "eve.runtime": (
        "CompiledAgent ModuleMap ResolvedAgent ResolvedFunctionTool ResolvedHook "
        "ResolvedProviderTool ResolvedSkill ResolvedTool ResolvedWorkflowTool load_compiled_agent "
        "load_module_map load_resolved_module_export resolve_agent resolve_hook_definition "
        "resolve_tool_definition"
    ),
}

#: the vocabulary modules: every class they define, and these besides
VOCABULARY: dict[str, list[str]] = {
    "eve.errors": [],
    "eve.events": [
        "CompactionReason",
        "EVENT_TYPES",
        "EventType",
        "InputRequest",
        "RequestKind",
        "ResultStatus",
        "SessionEvent",
        "TaskKind",
        "TurnStop",
        "decode_any_event",
        "decode_event",
    ],
    "eve.manifest": [
        "AnyToolEntry",
        "ApprovalKind",
        "Backing",
        "DIAGNOSTICS_PATH",
        "DISCOVERY_MANIFEST_PATH",
        "HandlingKind",
        "MANIFEST_PATH",
        "METADATA_PATH",
        "MODULE_MAP_PATH",
        "McpServer",
        "MemoryProviderEntry",
        "OpenAIApi",
        "ROOT_NODE_ID",
        "ReasoningLevel",
        "RunnableToolEntry",
        "SCHEMA_VERSION",
        "SchemaSource",
        "Severity",
        "ThinkingMode",
        "ToolEntry",
        "decode",
        "encode",
    ],
    "eve.messages": [
        "AssistantPart",
        "MediaPart",
        "Message",
        "ToolResultPart",
        "UserPart",
        "assistant_message",
        "plain_transcript",
        "tool_result",
        "user_message",
    ],
}

PUBLIC = sorted([*PINNED, *VOCABULARY])


def documented_modules() -> list[str]:
    """The first column of the table under "## The public surface" in docs/architecture.md."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## The public surface\n")[1].split("\n## ")[0]
    return re.findall(r"^\| `(eve[\w.]*)` \|", section, flags=re.M)


def test_the_documented_public_modules_are_the_pinned_ones() -> None:
    documented = documented_modules()
    assert len(documented) == len(set(documented)), "a module is listed twice"
    assert sorted(documented) == PUBLIC


@pytest.mark.parametrize("module", sorted(PINNED))
def test_a_public_module_exports_exactly_its_pinned_names(module: str) -> None:
    exported = importlib.import_module(module).__all__
    assert sorted(exported) == PINNED[module].split(), (
        f"{module}.__all__ changed: a change to eve's public surface; if it is meant, update "
        "PINNED here (and docs/architecture.md when the module's role changes)"
    )
    assert len(set(exported)) == len(exported), f"{module}.__all__ lists a name twice"


def defined_classes(module: str) -> set[str]:
    namespace = vars(importlib.import_module(module))
    return {
        name
        for name, value in namespace.items()
        if isinstance(value, type) and value.__module__ == module and not name.startswith("_")
    }


@pytest.mark.parametrize("module", sorted(VOCABULARY))
def test_a_vocabulary_module_exports_every_class_it_defines(module: str) -> None:
    exported = importlib.import_module(module).__all__
    assert len(set(exported)) == len(exported), f"{module}.__all__ lists a name twice"
    missing = defined_classes(module) - set(exported)
    assert sorted(missing) == [], f"add them to {module}.__all__: every class there is public"
    assert sorted(set(exported) - defined_classes(module)) == VOCABULARY[module]


@pytest.mark.parametrize("module", PUBLIC)
def test_every_exported_name_resolves(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in loaded.__all__:
        # a lazily exported name (eve._lazy) imports its module here
        assert getattr(loaded, name) is not None or name == "__version__", f"{module}.{name}"


def internal_packages() -> list[str]:
    packages = []
    for init in sorted((REPO_ROOT / "eve").rglob("__init__.py")):
        parts = init.parent.relative_to(REPO_ROOT).parts
        if "templates" in parts:  # what `eve init` writes into a new app, not eve's
            continue
        name = ".".join(parts)
        if name not in PUBLIC:
            packages.append(name)
    return packages


@pytest.mark.parametrize("package", internal_packages())
def test_an_internal_package_says_so(package: str) -> None:
    path = REPO_ROOT / package.replace(".", "/") / "__init__.py"
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert "Internal:" in docstring, (
        f"{package} is not in docs/architecture.md's public surface: its docstring should say "
        "so with a line starting 'Internal:' naming what to import instead"
    )


def test_a_top_level_module_is_public_or_has_an_underscore_name() -> None:
    # internals sit behind ``_`` names (``eve._redact``) or in internal packages, so a name
    # that reads as public is one the docs list and this file pins
    modules = sorted(p.stem for p in (REPO_ROOT / "eve").glob("*.py"))
    public = [m for m in modules if not m.startswith("_")]
    assert public, "the scan found eve's modules"
    assert [m for m in public if f"eve.{m}" not in PUBLIC] == []
