"""Discovery: walk ``agent/`` in alphabetical order and apply the naming rules. Imports nothing.

The walk reads files (to hash them and to parse skill front matter) but never executes authored
code. What counts as a source and how it is hashed is ``eve.artifacts``', which the freshness
check (``eve compile --check``) shares, so the two can never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from eve._frontmatter import FrontMatterError, parse_front_matter
from eve.artifacts import AGENT_DIR, hash_sources, is_ignored
from eve.compiler.diagnostics import DiagnosticSink
from eve.compiler.schedule_files import walk_schedules
from eve.manifest import ROOT_NODE_ID, DiscoveredNode, DiscoveryManifest, SourceFile

TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
SUBAGENT_ID = re.compile(r"^[a-z][a-z0-9_-]*$")
HOOK_NAME = TOOL_NAME
KNOWN_DIRS = frozenset(
    {
        "tools",
        "skills",
        "hooks",
        "connections",
        "channels",
        "schedules",
        "memory",
        "subagents",
        "lib",
        "evals",
        "sandbox",
    }
)
EVAL_NAME = TOOL_NAME
CHANNEL_NAME = TOOL_NAME
#: a connection's name prefixes its tools' names (``docs__search``), within the 64 characters
#: providers allow a tool name (``eve.connections.names``), so it stays short
CONNECTION_NAME_MAX = 40
#: directories eve knows of (the TypeScript eve supports them) but this version does not run
UNSUPPORTED_DIRS = frozenset(
    {
        "extensions",
        "instructions",
    }
)
ROOT_FILES = frozenset({"agent.py", "instructions.md", "__init__.py", "README.md"})
#: a node's dynamic instructions (``define_instructions``), appended to instructions.md
DYNAMIC_INSTRUCTIONS_FILE = "instructions.py"
#: the root agent's custom auth hook (``define_auth``)
AUTH_FILE = "auth.py"
#: a node's one memory slot, named ``memory`` (``memory/<name>.py`` holds named ones)
MEMORY_FILE = "memory.py"
MEMORY_NAME = TOOL_NAME
#: a node's sandbox declaration (``define_sandbox``); ``sandbox/workspace/**`` seeds it
SANDBOX_FILE = "sandbox.py"
SANDBOX_WORKSPACE = "workspace"


@dataclass(kw_only=True)
class SkillFile:
    name: str
    path: str
    description: str


@dataclass(kw_only=True)
class NodeFiles:
    """What one node directory holds, as app-root-relative paths."""

    node_id: str
    root: str
    agent_module: str | None = None
    instructions: str | None = None
    #: ``instructions.py``: the part of the system prompt evaluated each turn
    dynamic_instructions: str | None = None
    #: ``auth.py``: the server's custom auth hook (root agent only)
    auth_module: str | None = None
    tools: list[tuple[str, str]] = field(default_factory=list)  # (tool name, path)
    skills: list[SkillFile] = field(default_factory=list)
    hooks: list[tuple[str, str]] = field(default_factory=list)  # (hook name, path)
    connections: list[tuple[str, str]] = field(default_factory=list)  # (connection name, path)
    channels: list[tuple[str, str]] = field(default_factory=list)  # (channel name, path)
    #: (schedule name, path): ``schedules/reports/daily.md`` is ``reports/daily``
    schedules: list[tuple[str, str]] = field(default_factory=list)
    memory: list[tuple[str, str]] = field(default_factory=list)  # (slot name, path)
    sandbox: str | None = None
    #: every file under ``sandbox/workspace/``, sorted
    sandbox_workspace: list[str] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Discovery:
    """The result of the walk: nodes in discovery order plus every source file's hash."""

    app_root: Path
    nodes: dict[str, NodeFiles]
    sources: dict[str, str]  # path → sha256
    #: ``agent/evals/*.py`` as (eval name, path), read only by ``compiler.evals``
    evals: list[tuple[str, str]] = field(default_factory=list)

    def manifest(self) -> DiscoveryManifest:
        return DiscoveryManifest(
            nodes={
                node_id: DiscoveredNode(
                    node_id=node_id,
                    root=node.root,
                    agent_module=node.agent_module,
                    instructions=node.instructions,
                    dynamic_instructions=node.dynamic_instructions,
                    auth_module=node.auth_module,
                    tools=[path for _, path in node.tools],
                    skills=[skill.path for skill in node.skills],
                    hooks=[path for _, path in node.hooks],
                    connections=[path for _, path in node.connections],
                    channels=[path for _, path in node.channels],
                    schedules=[path for _, path in node.schedules],
                    memory=[path for _, path in node.memory],
                    sandbox=node.sandbox,
                    sandbox_workspace=node.sandbox_workspace,
                    subagents=node.subagents,
                )
                for node_id, node in self.nodes.items()
            },
            evals=[path for _, path in self.evals],
            sources=[SourceFile(path=p, sha256=h) for p, h in sorted(self.sources.items())],
        )


class _Walker:
    def __init__(self, app_root: Path, sink: DiagnosticSink) -> None:
        self.app_root = app_root
        self.sink = sink
        self.nodes: dict[str, NodeFiles] = {}
        self.evals: list[tuple[str, str]] = []

    def rel(self, path: Path) -> str:
        return path.relative_to(self.app_root).as_posix()

    def walk_node(self, directory: Path, node_id: str) -> None:
        node = NodeFiles(node_id=node_id, root=self.rel(directory))
        self.nodes[node_id] = node
        for entry in _sorted_entries(directory):
            if entry.is_dir():
                self.node_dir(node, entry)
            else:
                self.node_file(node, entry)
        prompt = (node.instructions, node.dynamic_instructions)
        if node_id == ROOT_NODE_ID and prompt == (None, None):
            self.sink.error(
                "discover/required-instructions-missing",
                "the agent has no instructions.md: write the system prompt there (or its "
                "part that changes per turn in instructions.py)",
                source_path=node.root,
                node_id=node_id,
            )
        if node_id != ROOT_NODE_ID and node.agent_module is None:
            self.sink.error(
                "discover/required-subagent-config-module-missing",
                f"subagent '{node_id}' needs an agent.py with define_agent(description=...)",
                source_path=node.root,
                node_id=node_id,
            )
        if node.sandbox_workspace and node.sandbox is None:
            self.sink.error(
                "discover/sandbox-workspace-without-sandbox",
                "sandbox/workspace/ seeds a sandbox's workspace, but this node declares no "
                f"sandbox: add {SANDBOX_FILE} with define_sandbox(...) beside it",
                source_path=f"{node.root}/sandbox",
                node_id=node_id,
            )
        tool_names = {name for name, _ in node.tools}
        self.connection_collisions(node)
        for child in node.subagents:
            child_name = child.rsplit("/", 1)[-1]
            if child_name in tool_names:
                self.sink.error(
                    "discover/slot-collision",
                    f"subagent '{child_name}' and tool '{child_name}' share a name; the model "
                    "sees subagents as tools, so rename one",
                    source_path=self.nodes[child].root,
                    node_id=node_id,
                )

    def node_file(self, node: NodeFiles, entry: Path) -> None:
        rel = self.rel(entry)
        if entry.name == "agent.py":
            node.agent_module = rel
        elif entry.name == "instructions.md":
            node.instructions = rel
        elif entry.name == DYNAMIC_INSTRUCTIONS_FILE:
            node.dynamic_instructions = rel
        elif entry.name == AUTH_FILE:
            self.auth_file(node, rel)
        elif entry.name == MEMORY_FILE:
            node.memory.append(("memory", rel))
        elif entry.name == SANDBOX_FILE:
            node.sandbox = rel
        elif entry.name not in ROOT_FILES:
            self.sink.warning(
                "discover/unknown-file",
                f"{entry.name} is not part of an agent (expected agent.py, instructions.md, "
                "instructions.py, auth.py, memory.py and the directories tools/, skills/, hooks/, "
                "connections/, channels/, memory/, subagents/, lib/); it is ignored",
                source_path=rel,
                node_id=node.node_id,
            )

    def auth_file(self, node: NodeFiles, rel: str) -> None:
        if node.node_id == ROOT_NODE_ID:
            node.auth_module = rel
            return
        # a subagent is reached through its caller's session, never by a request of its own
        self.sink.error(
            "discover/auth-in-subagent",
            f"{AUTH_FILE} decides who calls the server, so only the root agent has one "
            f"(agent/{AUTH_FILE}); move it there or delete it",
            source_path=rel,
            node_id=node.node_id,
        )

    def node_dir(self, node: NodeFiles, entry: Path) -> None:
        rel = self.rel(entry)
        walk = self.directory_walks().get(entry.name)
        if walk is not None:
            walk(node, entry)
        elif entry.name == "lib":
            return  # reached only through imports
        elif entry.name in UNSUPPORTED_DIRS:
            self.sink.warning(
                "discover/unsupported-directory",
                f"{entry.name}/ is not supported by this version of eve; it is ignored",
                source_path=rel,
                node_id=node.node_id,
            )
        else:
            self.sink.warning(
                "discover/unknown-directory",
                f"{entry.name}/ is not an agent directory (tools, skills, hooks, connections, "
                "channels, memory, sandbox, subagents, lib); it is ignored",
                source_path=rel,
                node_id=node.node_id,
            )

    def directory_walks(self) -> dict[str, Callable[[NodeFiles, Path], None]]:
        """The walk of each directory a node may hold, by name (``lib/`` is never walked)."""
        return {
            "tools": self.tools,
            "skills": self.skills,
            "hooks": self.hooks,
            "connections": self.connections,
            "channels": self.channels,
            "schedules": self.schedules,
            "memory": self.memory_dir,
            "sandbox": self.sandbox_dir,
            "subagents": self.subagents,
            "evals": self.eval_files,
        }

    def tools(self, node: NodeFiles, directory: Path) -> None:
        for entry in _sorted_entries(directory):
            rel = self.rel(entry)
            stem = entry.name.removesuffix(".py")
            if entry.name == "__init__.py":
                continue
            if entry.suffix == ".md" and _has_front_matter(entry):
                self.sink.error(
                    "discover/wrong-definition-kind",
                    f"{entry.name} looks like a skill (it has front matter) but is in tools/; "
                    "move it to skills/",
                    source_path=rel,
                    node_id=node.node_id,
                )
            elif entry.is_dir() or entry.suffix != ".py":
                self.sink.warning(
                    "discover/unknown-file",
                    "tools/ holds one tool per .py file; this entry is ignored",
                    source_path=rel,
                    node_id=node.node_id,
                )
            elif not (stem.isascii() and TOOL_NAME.match(stem)):
                self.sink.error(
                    "discover/tool-name-invalid",
                    f"tool file '{entry.name}' must be a snake_case ASCII name ending in .py "
                    f"(e.g. '{_suggest_snake(stem)}.py'); the file name is the tool name",
                    source_path=rel,
                    node_id=node.node_id,
                )
            elif stem == "eve" or stem.startswith("eve_"):
                self.sink.error(
                    "discover/tool-name-reserved",
                    f"tool names 'eve' and 'eve_…' are reserved for built-ins; rename {rel}",
                    source_path=rel,
                    node_id=node.node_id,
                )
            else:
                node.tools.append((stem, rel))

    def modules(
        self,
        node: NodeFiles,
        directory: Path,
        *,
        holds: str,
        name_problem: Callable[[str], str | None],
        invalid: tuple[str, str, str],
        keep: Callable[[Path], bool] = lambda entry: False,
    ) -> list[tuple[str, str]]:
        """The ``(stem, path)`` of each module in a folder that holds one per ``.py`` file
        (hooks/, connections/, evals/): ``holds`` says what, for the warning about anything
        else; a name ``name_problem`` objects to is the error ``invalid`` (its code, what the
        file is, what its name is used for); ``keep`` entries are passed over in silence."""
        found: list[tuple[str, str]] = []
        code, noun, used_as = invalid
        for entry in _sorted_entries(directory):
            rel = self.rel(entry)
            stem = entry.name.removesuffix(".py")
            if entry.name == "__init__.py" or keep(entry):
                continue
            if entry.is_dir() or entry.suffix != ".py":
                self.sink.warning(
                    "discover/unknown-file",
                    f"{directory.name}/ holds {holds}; this entry is ignored",
                    source_path=rel,
                    node_id=node.node_id,
                )
            elif problem := name_problem(stem):
                self.sink.error(
                    code,
                    f"{noun} file '{entry.name}' {problem}: {used_as}",
                    source_path=rel,
                    node_id=node.node_id,
                )
            else:
                found.append((stem, rel))
        return found

    def hooks(self, node: NodeFiles, directory: Path) -> None:
        node.hooks += self.modules(
            node,
            directory,
            holds="one hook per .py file (define_hook(events=...))",
            name_problem=_snake_case_problem(HOOK_NAME),
            invalid=("discover/hook-name-invalid", "hook", "it is imported as a module"),
        )

    def connections(self, node: NodeFiles, directory: Path) -> None:
        node.connections += self.modules(
            node,
            directory,
            holds="one MCP server per .py file (define_mcp_connection)",
            name_problem=_connection_name_problem,
            invalid=(
                "discover/connection-name-invalid",
                "connection",
                "the file name is the connection's name and prefixes its tools' names "
                "(<name>__<tool>)",
            ),
        )

    def not_at_root(self, node: NodeFiles, directory: Path, code: str, why: str) -> bool:
        """Whether ``directory`` (one only the root may have) is a subagent's: then the error
        ``code`` says ``why`` it belongs at the root."""
        if node.node_id == ROOT_NODE_ID:
            return False
        name = directory.name
        self.sink.error(
            code,
            f"{name}/ belongs at the agent's root (agent/{name}/): {why}; move the files there",
            source_path=self.rel(directory),
            node_id=node.node_id,
        )
        return True

    def channels(self, node: NodeFiles, directory: Path) -> None:
        # a server mounts the agent's doors; a subagent is reached through its parent
        why = (
            "a channel is a door to the whole agent, and a subagent is reached only through "
            "its parent"
        )
        if self.not_at_root(node, directory, "discover/channels-not-at-root", why):
            return
        node.channels += self.modules(
            node,
            directory,
            holds="one channel per .py file (ai_sdk(...), a2a(...), define_channel(...) …)",
            name_problem=_snake_case_problem(CHANNEL_NAME),
            invalid=(
                "discover/channel-name-invalid",
                "channel",
                "the file name is the channel's name and its default path /channels/<name>",
            ),
        )

    def schedules(self, node: NodeFiles, directory: Path) -> None:
        # a tick starts a session of the agent; a subagent runs only inside its parent's
        why = (
            "a scheduled run is a session of the whole agent, and a subagent runs only when "
            "its parent calls it"
        )
        if self.not_at_root(node, directory, "discover/schedules-not-at-root", why):
            return
        found = walk_schedules(directory, self.sink, self.rel)
        node.schedules += found

    def sandbox_dir(self, node: NodeFiles, directory: Path) -> None:
        """``sandbox/workspace/**``: the files each session's workspace starts with."""
        for entry in _sorted_entries(directory):
            if entry.name == SANDBOX_WORKSPACE and entry.is_dir():
                node.sandbox_workspace = sorted(
                    self.rel(path)
                    for path in entry.rglob("*")
                    if path.is_file()
                    and not any(is_ignored(p) for p in path.relative_to(entry).parts)
                )
                continue
            self.sink.warning(
                "discover/sandbox-unknown-entry",
                f"sandbox/{entry.name} is ignored: sandbox/ holds workspace/, the files each "
                "session's workspace starts with (declare the sandbox in sandbox.py)",
                source_path=self.rel(entry),
                node_id=node.node_id,
            )

    def memory_dir(self, node: NodeFiles, directory: Path) -> None:
        if (directory.parent / MEMORY_FILE).is_file():
            # ``agent.memory`` cannot be both the module memory.py and the package memory/
            self.sink.error(
                "discover/memory-file-and-directory",
                f"{MEMORY_FILE} and memory/ cannot both be here: Python imports only one of "
                "them as the module 'memory'; move the slot of memory.py into memory/",
                source_path=self.rel(directory),
                node_id=node.node_id,
            )
            return
        node.memory += self.modules(
            node,
            directory,
            holds="one memory slot per .py file (define_memory(scope=...))",
            name_problem=_snake_case_problem(MEMORY_NAME),
            invalid=(
                "discover/memory-name-invalid",
                "memory",
                "the file name is the slot's name, which the memory tools take",
            ),
        )

    def connection_collisions(self, node: NodeFiles) -> None:
        """A tool whose name a connection's tools could take (``docs__search``)."""
        for connection, path in node.connections:
            for tool, tool_path in node.tools:
                if tool.startswith(f"{connection}__"):
                    self.sink.error(
                        "discover/connection-name-collision",
                        f"tool '{tool}' ({tool_path}) has the prefix of connection "
                        f"'{connection}', whose tools the model sees as '{connection}__<tool>'; "
                        "rename the tool or the connection",
                        source_path=path,
                        node_id=node.node_id,
                    )

    def skills(self, node: NodeFiles, directory: Path) -> None:
        for entry in _sorted_entries(directory):
            rel = self.rel(entry)
            stem = entry.name.removesuffix(".md")
            if entry.suffix == ".py":
                self.sink.error(
                    "discover/wrong-definition-kind",
                    "skills/ holds markdown skills; Python modules belong in tools/ or lib/",
                    source_path=rel,
                    node_id=node.node_id,
                )
            elif entry.is_dir() or entry.suffix != ".md":
                self.sink.warning(
                    "discover/unknown-file",
                    "skills/ holds one skill per .md file; this entry is ignored",
                    source_path=rel,
                    node_id=node.node_id,
                )
            elif not SKILL_NAME.match(stem):
                self.sink.error(
                    "discover/skill-name-invalid",
                    f"skill file '{entry.name}' must be lowercase letters, digits, - or _",
                    source_path=rel,
                    node_id=node.node_id,
                )
            else:
                self.skill(node, entry, stem, rel)

    def eval_files(self, node: NodeFiles, directory: Path) -> None:
        if node.node_id != ROOT_NODE_ID:
            self.sink.warning(
                "discover/evals-not-at-root",
                "evals/ belongs at the agent's root (agent/evals/): an eval talks to the whole "
                "agent, its subagents included; this directory is ignored",
                source_path=self.rel(directory),
                node_id=node.node_id,
            )
            return
        self.evals += self.modules(
            node,
            directory,
            holds="one eval per .py file (define_eval(cases=[...])) and the offline scripts "
            "they name (.json)",
            name_problem=_snake_case_problem(EVAL_NAME),
            invalid=("discover/eval-name-invalid", "eval", "the file name is the eval's name"),
            # a JSON file here is a script an eval's model names
            keep=lambda entry: entry.is_file() and entry.suffix == ".json",
        )

    def skill(self, node: NodeFiles, entry: Path, stem: str, rel: str) -> None:
        try:
            meta, _ = parse_front_matter(entry.read_text(encoding="utf-8"))
        except (FrontMatterError, UnicodeDecodeError) as error:
            self.sink.error(
                "discover/skill-frontmatter-invalid",
                f"{error}; a skill starts with '---', a 'description: …' line and '---'",
                source_path=rel,
                node_id=node.node_id,
            )
            return
        description = meta.get("description", "").strip()
        if not description:
            self.sink.error(
                "discover/skill-frontmatter-invalid",
                "the skill's front matter has no description: the model reads it to decide "
                "when to load the skill",
                source_path=rel,
                node_id=node.node_id,
            )
            return
        node.skills.append(SkillFile(name=stem, path=rel, description=description))

    def subagents(self, node: NodeFiles, directory: Path) -> None:
        for entry in _sorted_entries(directory):
            rel = self.rel(entry)
            if not entry.is_dir():
                self.sink.warning(
                    "discover/unknown-file",
                    "subagents/ holds one directory per subagent; this file is ignored",
                    source_path=rel,
                    node_id=node.node_id,
                )
                continue
            if _reserved_subagent_id(entry.name) or not SUBAGENT_ID.match(entry.name):
                self.sink.error(
                    "discover/subagent-id-invalid",
                    f"subagent id '{entry.name}' must be lowercase letters, digits, - or _, "
                    "and not 'agent' or 'eve', 'eve_…', 'eve-…' (reserved: the parent's model "
                    "calls a subagent by its id, beside the eve__ built-ins)",
                    source_path=rel,
                    node_id=node.node_id,
                )
                continue
            child_id = (
                entry.name if node.node_id == ROOT_NODE_ID else f"{node.node_id}/{entry.name}"
            )
            node.subagents.append(child_id)
            self.walk_node(entry, child_id)


def _snake_case_problem(pattern: re.Pattern[str]) -> Callable[[str], str | None]:
    def problem(stem: str) -> str | None:
        if stem.isascii() and pattern.match(stem):
            return None
        return f"must be a snake_case ASCII name ending in .py (e.g. '{_suggest_snake(stem)}.py')"

    return problem


def _connection_name_problem(stem: str) -> str | None:
    if problem := _snake_case_problem(TOOL_NAME)(stem):
        return problem
    if "__" in stem or stem.endswith("_"):
        return "may not contain '__' or end in '_': '__' separates it from the tool names"
    if stem == "eve" or stem.startswith("eve_"):
        return "may not be 'eve' or start with 'eve_' (reserved for built-ins)"
    if len(stem) > CONNECTION_NAME_MAX:
        return f"is longer than {CONNECTION_NAME_MAX} characters"
    return None


def _reserved_subagent_id(name: str) -> bool:
    return name in ("agent", "eve") or name.startswith(("eve_", "eve-"))


def _sorted_entries(directory: Path) -> list[Path]:
    return sorted((e for e in directory.iterdir() if not is_ignored(e.name)), key=lambda e: e.name)


def _has_front_matter(path: Path) -> bool:
    try:
        return path.read_text(encoding="utf-8").startswith("---")
    except (OSError, UnicodeDecodeError):
        return False


def _suggest_snake(stem: str) -> str:
    spaced = re.sub(r"(?<!^)(?=[A-Z])", "_", stem)
    return re.sub(r"[^a-z0-9_]+", "_", spaced.lower()).strip("_") or "my_tool"


def discover(app_root: Path, sink: DiagnosticSink) -> Discovery:
    """Walk ``app_root/agent`` and report what it holds; problems go to ``sink``."""
    agent_root = app_root / AGENT_DIR
    if not agent_root.is_dir():
        sink.error(
            "discover/agent-directory-missing",
            f"no {AGENT_DIR}/ directory in {app_root}: run eve from the app root, "
            "the directory that contains agent/",
        )
        return Discovery(app_root=app_root, nodes={}, sources={})
    walker = _Walker(app_root, sink)
    walker.walk_node(agent_root, ROOT_NODE_ID)
    return Discovery(
        app_root=app_root,
        nodes=walker.nodes,
        sources=hash_sources(app_root),
        evals=walker.evals,
    )
