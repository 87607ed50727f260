"""Static import analysis of the authored tree: who imports whom, closures and cycles.

Reads the modules' ``import`` statements with ``ast`` (no execution), so the runtime-entry
closure includes imports that only run inside functions, and absolute (``agent.lib.x``) and
relative (``..lib.x``) forms resolve to the same file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eve._authored import AUTHORED_PACKAGE, module_id_for
from eve.compiler.cache import CompileCache
from eve.compiler.mutation import Mutation, find_module_state_mutations


@dataclass(kw_only=True)
class AuthoredModule:
    path: str
    module_id: str
    is_package: bool
    #: the file parses (a syntax error is reported when the module is imported)
    parsed: bool
    #: paths of authored modules named by this module's import statements
    imports: list[str] = field(default_factory=list)
    #: module-level state changed inside functions, found in the same walk
    mutations: list[Mutation] = field(default_factory=list)


@dataclass(kw_only=True)
class ModuleGraph:
    modules: dict[str, AuthoredModule]

    def parents(self, path: str) -> list[str]:
        """``__init__.py`` files that Python runs before this module (implicit imports)."""
        parts = path.split("/")[:-1]
        out = []
        for i in range(1, len(parts) + 1):
            init = "/".join([*parts[:i], "__init__.py"])
            if init in self.modules and init != path:
                out.append(init)
        return out

    def closure(self, roots: Iterable[str]) -> set[str]:
        """Every authored module importing ``roots`` executes, the roots included."""
        seen: set[str] = set()
        stack = [r for r in roots if r in self.modules]
        while stack:
            path = stack.pop()
            if path in seen:
                continue
            seen.add(path)
            stack.extend(self.modules[path].imports)
            stack.extend(self.parents(path))
        return seen

    def find_cycle(self) -> list[str] | None:
        """One import cycle among authored modules (first by path order), or ``None``."""
        state: dict[str, int] = {}  # 1 = on the stack, 2 = finished
        trail: list[str] = []

        def visit(path: str) -> list[str] | None:
            state[path] = 1
            trail.append(path)
            for dep in self.modules[path].imports:
                if state.get(dep) == 1:
                    return [*trail[trail.index(dep) :], dep]
                if dep not in state and (found := visit(dep)):
                    return found
            trail.pop()
            state[path] = 2
            return None

        for path in sorted(self.modules):
            if path not in state and (found := visit(path)):
                return found
        return None


def _package_of(module: AuthoredModule) -> str:
    return module.module_id if module.is_package else module.module_id.rpartition(".")[0]


def _absolute(module: AuthoredModule, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    base = _package_of(module).split(".")
    if node.level - 1 > len(base) - 1:
        return None  # beyond the top of the authored package: Python raises, not our business
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(module: AuthoredModule, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        target = _absolute(module, node)
        if target is None:
            return []
        # `from agent.lib import catalog` may name the submodule agent.lib.catalog
        return [target, *(f"{target}.{alias.name}" for alias in node.names)]
    return []


def _resolve(names: list[str], by_id: dict[str, str]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name != AUTHORED_PACKAGE and not name.startswith(AUTHORED_PACKAGE + "."):
            continue
        # `import agent.lib.catalog` runs agent.lib.catalog; the parents come via parents()
        if name in by_id and by_id[name] not in out:
            out.append(by_id[name])
    return out


def _scan(module: AuthoredModule, tree: ast.Module) -> list[str]:
    """One walk: the dotted names imported, and the module-state mutations."""
    names: list[str] = []
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.extend(_targets(module, node))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append(node)
    module.mutations = find_module_state_mutations(tree, functions)
    return names


def analyze(app_root: Path, paths: Iterable[str], cache: CompileCache | None = None) -> ModuleGraph:
    """Parse every authored ``.py`` file and record the authored modules it imports.

    Trees are dropped as soon as they are read: a thousand kept ASTs make every garbage
    collection in the rest of the compile scan millions of nodes.
    """
    modules: dict[str, AuthoredModule] = {}
    imported: dict[str, list[str]] = {}
    for path in sorted(p for p in paths if p.endswith(".py")):
        source = (app_root / path).read_bytes()
        module = AuthoredModule(
            path=path,
            module_id=module_id_for(path),
            is_package=path.endswith("/__init__.py"),
            parsed=True,
        )
        cached = cache.scan(path, source) if cache else None
        if cached is not None:
            imported[path], module.mutations = cached
        else:
            try:
                imported[path] = _scan(module, ast.parse(source, filename=path))
            except SyntaxError:
                module.parsed = False  # importing it reports the error with its line
            else:
                if cache:
                    cache.record_scan(path, source, imported[path], module.mutations)
        modules[path] = module
    by_id = {m.module_id: m.path for m in modules.values()}
    for path, names in imported.items():
        modules[path].imports = [p for p in _resolve(names, by_id) if p != path]
    return ModuleGraph(modules=modules)
