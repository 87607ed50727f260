"""Find tool code that mutates module-level state, which every session of the process shares.

A Python module runs once per process, so ``count += 1`` on a module global counts across all
users. The check is syntactic and deliberately narrow (no false alarms on constants): a
``global`` statement followed by an assignment, or an in-place change (method call, item or
attribute assignment, augmented assignment) of a module-level list, dict or set.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "update",
        "add",
        "discard",
        "setdefault",
        "sort",
        "reverse",
        "appendleft",
        "extendleft",
    }
)
_MUTABLE_CALLS = frozenset(
    {"list", "dict", "set", "defaultdict", "deque", "Counter", "OrderedDict"}
)


@dataclass(frozen=True, kw_only=True)
class Mutation:
    name: str
    line: int
    how: str


def _is_mutable_value(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in _MUTABLE_CALLS
    return False


def _module_level_mutables(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and _is_mutable_value(stmt.value):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif (
            isinstance(stmt, ast.AnnAssign)
            and stmt.value is not None
            and isinstance(stmt.target, ast.Name)
            and _is_mutable_value(stmt.value)
        ):
            names.add(stmt.target.id)
    return names


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = fn.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in params if a is not None}


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _function_mutations(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, mutables: set[str]
) -> list[Mutation]:
    # One walk collects everything; the decision needs all of it (a later `global` or a
    # local assignment changes what an earlier line means).
    declared_global: set[str] = set()
    stored = _params(fn)
    rebinds: list[tuple[str, int]] = []  # `name = …` (matters only for globals)
    changes: list[tuple[str, int, str]] = []  # in-place changes of `name`
    for node in ast.walk(fn):
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.add(node.id)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = _root_name(target)
                if name is None:
                    continue
                if isinstance(target, ast.Name):
                    rebinds.append((name, node.lineno))
                else:
                    changes.append((name, node.lineno, "item assignment"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATING_METHODS
            and (name := _root_name(node.func.value)) is not None
        ):
            changes.append((name, node.lineno, f".{node.func.attr}()"))
    watched = (mutables - (stored - declared_global)) | declared_global
    found = [
        Mutation(name=n, line=line, how="global assignment")
        for n, line in rebinds
        if n in declared_global
    ]
    found += [Mutation(name=n, line=line, how=how) for n, line, how in changes if n in watched]
    return found


def find_module_state_mutations(
    tree: ast.Module, functions: list[ast.FunctionDef | ast.AsyncFunctionDef] | None = None
) -> list[Mutation]:
    """Mutations of module-level state inside any function of the module, by line.

    ``functions`` (every function node of ``tree``) saves a walk when the caller has them.
    """
    mutables = _module_level_mutables(tree)
    if functions is None:
        functions = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
    found: list[Mutation] = []
    for node in functions:
        found.extend(_function_mutations(node, mutables))
    unique = {(m.line, m.name): m for m in found}
    return [unique[k] for k in sorted(unique)]
