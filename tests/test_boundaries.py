"""The package's boundaries, checked on its real import graph (see docs/architecture.md).

The graph comes from the source: every ``import`` statement of every module under ``eve/``,
at any depth (inside functions and methods too, since a lazy import still runs), relative
imports resolved, and a name a package loads lazily (its ``eve._lazy`` ``_LAZY`` table)
leading to the module that defines it. Refused:

* the compiler importing the runtime, or the runtime the compiler (directly or through
  other modules; a TYPE_CHECKING import counts, though the walk does not go on through it);
* ``dbos`` imported anywhere but ``eve/sessions/``;
* a provider SDK imported anywhere but its adapter in ``eve/models/``;
* ``opentelemetry`` imported anywhere but ``eve/tracing/``, and its SDK and exporters
  anywhere but ``eve/tracing/provider.py`` (the core needs ``opentelemetry-api`` only);
* the client reaching ``eve.execution`` or ``eve.sessions``;
* any cycle among eve's modules. Imports under ``if TYPE_CHECKING:`` are exempt from this
  rule only: they never run, and annotations legitimately point both ways;
* a package importing one that its row of the table in docs/architecture.md does not name,
  or a shared module listed there importing a package (the table is read from the page, so
  the page and the code cannot drift apart).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

EVE = REPO_ROOT / "eve"
#: a provider SDK → its adapter: that module and the ones split from it
#: (``eve.models.openai`` and ``eve.models.openai_responses``, …)
PROVIDER_SDKS = {
    "anthropic": "eve.models.anthropic",
    "openai": "eve.models.openai",
    "google": "eve.models.gemini",
    "boto3": "eve.models.bedrock",
    "botocore": "eve.models.bedrock",
}
#: what the ``eve[otel]`` extra brings, imported only where the CLI sets up a provider
OTEL_SDK = ("opentelemetry.sdk", "opentelemetry.exporter")


def in_adapter(module: str, sdk: str) -> bool:
    adapter = PROVIDER_SDKS[sdk]
    return module == adapter or module.startswith(adapter + "_")


@dataclass(frozen=True)
class Edge:
    source: str
    #: an eve module (``eve.compiler.pipeline``) or another distribution's top name (``dbos``)
    target: str
    line: int
    type_checking: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: what `eve init` writes into a new app: the app's modules, never imported as eve's
TEMPLATES = EVE / "templates"


@cache
def eve_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(EVE.rglob("*.py"))
        if not path.is_relative_to(TEMPLATES)
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST, *, guarded: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement under ``node``, with whether it sits in ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, guarded
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield from _imports(ast.Module(body=[statement], type_ignores=[]), guarded=True)
            for statement in child.orelse:
                yield from _imports(ast.Module(body=[statement], type_ignores=[]), guarded=guarded)
        else:
            yield from _imports(child, guarded=guarded)


def _resolve(module: str, statement: ast.stmt) -> list[str]:
    """What one statement imports: eve module names, or other distributions' top names."""
    known = eve_modules()
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
    else:
        assert isinstance(statement, ast.ImportFrom)
        base = statement.module or ""
        if statement.level:
            package = module if known[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(statement.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        # the module named after `from` runs too, before any name is taken from it
        names = [base, *(_from_import(base, alias.name) for alias in statement.names)]
    tops = [name if name.split(".")[0] == "eve" else name.split(".")[0] for name in names]
    return list(dict.fromkeys(tops))


def _from_import(base: str, name: str) -> str:
    # `from pkg import sub` imports the submodule when there is one; a name a package loads
    # lazily (eve._lazy) imports the module its _LAZY table names on first use
    if f"{base}.{name}" in eve_modules():
        return f"{base}.{name}"
    return lazy_table(base).get(name, base)


@cache
def lazy_table(package: str) -> dict[str, str]:
    """A package's ``_LAZY = {"Name": "eve.module", ...}``; empty when it has none."""
    path = eve_modules().get(package)
    if path is None or path.name != "__init__.py":
        return {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["_LAZY"]
            and isinstance(node.value, ast.Dict)
        ):
            return {
                ast.literal_eval(key): ast.literal_eval(value)
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if key is not None
            }
    return {}


@cache
def import_graph() -> tuple[Edge, ...]:
    edges: list[Edge] = []
    for module, path in eve_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement, guarded in _imports(tree):
            for target in _resolve(module, statement):
                edges.append(Edge(module, target, statement.lineno, guarded))
    return tuple(edges)


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def reachable(start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports when it runs, and every module one of those names in
    ``if TYPE_CHECKING:``, with one chain of imports that leads there. A TYPE_CHECKING
    import is a dependency of the module that writes it, but it runs nothing, so the walk
    does not go on through it (or importing a package for one submodule would depend on
    everything the package re-exports lazily)."""
    chains, ran = {start: [start]}, {start}
    stack = [start]
    while stack:
        current = stack.pop()
        for edge in (e for e in import_graph() if e.source == current):
            chains.setdefault(edge.target, [*chains[current], edge.target])
            if not edge.type_checking and edge.target not in ran:
                ran.add(edge.target)
                stack.append(edge.target)
    return chains


def forbidden_reach(sources: str, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for module in eve_modules():
        if not in_package(module, sources):
            continue
        for target, chain in reachable(module).items():
            if any(in_package(target, package) for package in forbidden):
                found.append(" → ".join(chain))
    return sorted(found)


def where(edge: Edge) -> str:
    return f"{eve_modules()[edge.source].relative_to(REPO_ROOT)}:{edge.line} imports {edge.target}"


def test_the_graph_sees_imports_at_any_depth() -> None:
    # Guards the walk itself: a walk that missed these would pass every rule below.
    edges = {(e.source, e.target, e.type_checking) for e in import_graph()}
    # inside a function
    assert ("eve.cli.compile_command", "eve.compiler", False) in edges
    assert ("eve.models.registry", "eve.models.offline", False) in edges
    # in a TYPE_CHECKING block
    assert ("eve.compiler", "eve.compiler.pipeline", True) in edges
    # a name a package loads lazily leads to the module that defines it
    assert ("eve.cli.compile_command", "eve.compiler.pipeline", False) in edges


@pytest.mark.parametrize(
    ("module", "statement", "imported"),
    [
        ("eve.compiler.pipeline", "from .discover import discover", ["eve.compiler.discover"]),
        ("eve.compiler.pipeline", "from .. import errors", ["eve", "eve.errors"]),
        ("eve.compiler", "from . import pipeline, x", ["eve.compiler", "eve.compiler.pipeline"]),
        (
            "eve.cli.run_command",
            "from eve.execution import run_agent",
            ["eve.execution", "eve.execution.loop"],
        ),
        ("eve.runtime.load", "from ..manifest import decode", ["eve.manifest"]),
        ("eve.runtime.load", "import msgspec.json, eve.errors", ["msgspec", "eve.errors"]),
    ],
)
def test_imports_resolve_to_modules(module: str, statement: str, imported: list[str]) -> None:
    assert _resolve(module, ast.parse(statement).body[0]) == imported


@pytest.mark.parametrize(
    ("sources", "forbidden"),
    [("eve.compiler", ("eve.runtime",)), ("eve.runtime", ("eve.compiler",))],
)
def test_the_compiler_and_the_runtime_never_import_each_other(
    sources: str, forbidden: tuple[str, ...]
) -> None:
    assert forbidden_reach(sources, forbidden) == []


def test_the_client_reaches_neither_execution_nor_sessions() -> None:
    assert forbidden_reach("eve.client", ("eve.execution", "eve.sessions")) == []


def test_only_the_sessions_package_imports_dbos() -> None:
    importers = [edge for edge in import_graph() if edge.target == "dbos"]
    assert importers, "the durable runtime imports dbos somewhere"
    # and the schedules: a schedule is a DBOS scheduled workflow (docs/schedules.md)
    outside = [
        where(e)
        for e in importers
        if not in_package(e.source, "eve.sessions") and not in_package(e.source, "eve.schedules")
    ]
    assert outside == []


#: who may import the mcp SDK: the connections (eve as an MCP client) and the mcp channel
#: kind (eve as an MCP server), each loaded only by an agent that has one
MCP_IMPORTERS = ("eve.connections", "eve.channels.kinds.mcp")


@pytest.mark.parametrize("sdk", ["mcp", "mcp_types"])
def test_the_mcp_sdk_is_imported_only_by_the_connections_and_the_mcp_channel(sdk: str) -> None:
    importers = [edge for edge in import_graph() if edge.target == sdk]
    assert importers, f"nothing imports {sdk}: is the connection pool gone?"
    outside = [
        where(e) for e in importers if not any(in_package(e.source, p) for p in MCP_IMPORTERS)
    ]
    assert outside == []


def test_only_the_tracing_package_imports_opentelemetry() -> None:
    importers = [edge for edge in import_graph() if edge.target == "opentelemetry"]
    assert importers, "nothing imports opentelemetry: is eve.tracing gone?"
    assert [where(e) for e in importers if not in_package(e.source, "eve.tracing")] == []


def otel_sdk_importers() -> list[str]:
    """``module:line`` of every statement importing the OpenTelemetry SDK or an exporter
    (the graph keeps only top names, and ``opentelemetry`` alone is the API)."""
    found: list[str] = []
    for module, path in eve_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement, _ in _imports(tree):
            if isinstance(statement, ast.Import):
                names = [alias.name for alias in statement.names]
            else:
                assert isinstance(statement, ast.ImportFrom)
                names = [statement.module or ""]
            if any(n == p or n.startswith(p + ".") for n in names for p in OTEL_SDK):
                found.append(f"{module}:{statement.lineno}")
    return found


def test_the_opentelemetry_sdk_is_imported_only_where_the_cli_sets_up_a_provider() -> None:
    found = otel_sdk_importers()
    assert found, "nothing imports the SDK: how does the CLI set up a provider?"
    assert [f for f in found if not f.startswith("eve.tracing.provider:")] == []


@pytest.mark.parametrize("sdk", sorted(PROVIDER_SDKS))
def test_a_provider_sdk_is_imported_only_by_its_adapter(sdk: str) -> None:
    importers = [edge for edge in import_graph() if edge.target == sdk]
    assert importers, f"nothing imports {sdk}: is the adapter gone?"
    outside = [where(e) for e in importers if not in_adapter(e.source, sdk)]
    assert outside == []


def find_cycle(edges: list[Edge]) -> list[str] | None:
    """One cycle of the graph as ``[a, b, …, a]``, or None (iterative depth-first search)."""
    successors: dict[str, list[str]] = {}
    for edge in edges:
        successors.setdefault(edge.source, []).append(edge.target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(successors):
        if root in state:
            continue
        path, iterators = [root], [iter(successors.get(root, []))]
        state[root] = 1
        while path:
            following = next(iterators[-1], None)
            if following is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                iterators.append(iter(successors.get(following, [])))
    return None


def test_eve_has_no_import_cycle() -> None:
    edges = [
        edge
        for edge in import_graph()
        if not edge.type_checking and edge.target in eve_modules() and edge.source != edge.target
    ]
    assert find_cycle(edges) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = [Edge("a", "b", 1, False), Edge("b", "c", 1, False), Edge("c", "a", 1, False)]
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle(edges[:2]) is None


# --- the table of docs/architecture.md --------------------------------------------------------

ARCHITECTURE = REPO_ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Row:
    #: the package and the other public paths the row covers (``eve.authoring``: ``eve``, …)
    names: tuple[str, ...]
    may_import: tuple[str, ...]
    everything: bool


def _eve_names(text: str) -> tuple[str, ...]:
    return tuple(n for n in text.split("`")[1::2] if n == "eve" or n.startswith("eve."))


def architecture_rows() -> list[Row]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("| package | its job | may import")[1].split("\n\n")[0]
    rows = []
    for line in table.splitlines()[2:]:
        package, _, may_import = (cell.strip() for cell in line.strip("|").split(" | "))
        rows.append(Row(_eve_names(package), _eve_names(may_import), may_import == "everything"))
    return rows


def shared_modules() -> tuple[str, ...]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    return _eve_names(text.split("The shared modules,")[1].split("What the boundary test")[0])


def _row_of(module: str, rows: list[Row]) -> Row | None:
    # the longest name that holds the module: `eve.tools.approval` is in `eve.tools`, and
    # `eve` (a name of the authoring row) only holds the package module itself
    best: tuple[int, Row] | None = None
    for row in rows:
        for name in row.names:
            holds = module == name if name == "eve" else in_package(module, name)
            if holds and (best is None or len(name) > best[0]):
                best = (len(name), row)
    return best[1] if best else None


def _private(module: str) -> bool:
    return module.split(".")[1].startswith("_") if "." in module else False


def test_each_package_imports_only_what_docs_architecture_md_allows() -> None:
    rows, shared = architecture_rows(), shared_modules()
    assert rows and shared, "the table and the shared-module list of docs/architecture.md"
    refused = []
    for edge in import_graph():
        if edge.target not in eve_modules() or _private(edge.source):
            continue
        if _private(edge.target) or any(in_package(edge.target, s) for s in shared):
            continue
        if any(in_package(edge.source, s) for s in shared):
            refused.append(f"{where(edge)}: a shared module imports a package")
            continue
        row = _row_of(edge.source, rows)
        if row is None:
            refused.append(f"{edge.source} is in no row of the table")
            continue
        # a name in "may import" allows its whole row (`eve.context` is the authoring row)
        allowed = {
            *row.may_import,
            *(n for r in rows if set(r.names) & set(row.may_import) for n in r.names),
        }
        if not (
            row.everything
            or _row_of(edge.target, rows) is row
            or any(in_package(edge.target, a) for a in allowed)
        ):
            refused.append(where(edge))
    assert sorted(set(refused)) == [], "\n".join(sorted(set(refused)))
